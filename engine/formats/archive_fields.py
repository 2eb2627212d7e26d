"""Strict field reads for the native archive (unlike SillyTavern's loose files, an archive is
written by this program, so nothing is coerced: a wrong type is an error naming the field).

Every text is bounded and free of NUL characters, and every JSON value is checked the same
way, because the database must be able to store all of it: an archive that validates can be
written in full, so an import never fails halfway.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

from engine.errors import FormatError
from engine.formats.fieldread import ObjectFields
from engine.formats.json_input import type_name

MAX_SHORT_TEXT: Final = 200
"""Longest name, key, speaker or platform reference (the database column width)."""
MAX_LONG_TEXT: Final = 16 * 1024 * 1024
"""Longest message text, error or note, in characters."""
MIN_INT: Final = -(2**31)
MAX_INT: Final = 2**31 - 1
"""Whole numbers must fit the database's 32-bit integer columns."""
MAX_JSON_DEPTH: Final = 64
"""Deepest nesting of a stored JSON value (settings, meta, variable values, asset data)."""

_T = TypeVar("_T", bound=str)


class Fields(ObjectFields):
    """Reads one JSON object of an archive strictly; ``path`` prefixes field names in errors."""

    __slots__ = ()

    @staticmethod
    def describe(value: object) -> str:
        """Type names as :mod:`engine.formats.json_input` words them (``boolean``)."""
        return type_name(value)

    def _get(self, key: str) -> Any:
        if key not in self.data:
            raise self.fail(key, "is missing")
        return self.data[key]

    def text(self, key: str, *, limit: int = MAX_SHORT_TEXT, empty: bool = True) -> str:
        """A required string of at most ``limit`` characters, without NUL."""
        value = self._get(key)
        if not isinstance(value, str):
            raise self.fail(key, f"expected text, got {type_name(value)}")
        check_text(value, limit=limit, source=self.source, field=self.where(key))
        if not empty and not value.strip():
            raise self.fail(key, "must not be empty")
        return value

    def opt_text(self, key: str, *, limit: int = MAX_SHORT_TEXT) -> str | None:
        """A string or ``null``."""
        if self._get(key) is None:
            return None
        return self.text(key, limit=limit)

    def integer(self, key: str, *, minimum: int | None = None, maximum: int | None = None) -> int:
        """A required whole number (a JSON integer, not a boolean) within the bounds."""
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"expected a whole number, got {type_name(value)}")
        minimum = MIN_INT if minimum is None else minimum
        maximum = MAX_INT if maximum is None else maximum
        if value < minimum:
            raise self.fail(key, f"must be at least {minimum}, got {value}")
        if value > maximum:
            raise self.fail(key, f"must be at most {maximum}, got {value}")
        return value

    def opt_int(
        self, key: str, *, minimum: int | None = None, maximum: int | None = None
    ) -> int | None:
        """A whole number or ``null``."""
        if self._get(key) is None:
            return None
        return self.integer(key, minimum=minimum, maximum=maximum)

    def number(self, key: str) -> float:
        """A required finite number."""
        value = self._get(key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"expected a number, got {type_name(value)}")
        if value != value or value in (float("inf"), float("-inf")):
            raise self.fail(key, "expected a finite number")
        return float(value)

    def flag(self, key: str) -> bool:
        """A required boolean."""
        value = self._get(key)
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {type_name(value)}")
        return value

    def choice(self, key: str, allowed: Sequence[_T]) -> _T:
        """One of ``allowed``."""
        value = self._get(key)
        for option in allowed:
            if value == option:
                return option
        raise self.fail(key, f"expected one of {', '.join(allowed)}, got {value!r:.60}")

    def instant(self, key: str) -> datetime:
        """A required ISO 8601 instant with a UTC offset."""
        value = self._get(key)
        if not isinstance(value, str):
            raise self.fail(key, f"expected an ISO 8601 date, got {type_name(value)}")
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            raise self.fail(key, f"not an ISO 8601 date: {value!r:.60}") from None
        if parsed.tzinfo is None:
            raise self.fail(key, "the date has no UTC offset")
        try:
            return parsed.astimezone(UTC)
        except OverflowError:
            raise self.fail(key, f"date out of range: {value!r:.60}") from None

    def opt_instant(self, key: str) -> datetime | None:
        """An instant or ``null``."""
        if self._get(key) is None:
            return None
        return self.instant(key)

    def json(self, key: str) -> Any:
        """Any storable JSON value (checked: bounded depth, texts without NUL)."""
        value = self._get(key)
        check_json(value, source=self.source, field=self.where(key))
        return value

    def obj(self, key: str) -> dict[str, Any]:
        """A storable JSON object."""
        value = self.json(key)
        if not isinstance(value, dict):
            raise self.fail(key, f"expected an object, got {type_name(value)}")
        return value

    def items(self, key: str, *, limit: int) -> list[Any]:
        """A required list of at most ``limit`` items."""
        value = self._get(key)
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list, got {type_name(value)}")
        if len(value) > limit:
            raise self.fail(key, f"has {len(value)} items, over the limit of {limit}")
        return value

    def child(self, key: str) -> Fields:
        """The nested object at ``key``."""
        return Fields(self._get(key), source=self.source, path=self.where(key))


def check_text(value: str, *, limit: int, source: str, field: str) -> None:
    """Reject over-long texts and NUL characters (PostgreSQL cannot store NUL in text)."""
    if len(value) > limit:
        raise FormatError(f"is {len(value)} characters, over {limit}", source=source, field=field)
    if "\x00" in value:
        raise FormatError("contains a NUL character", source=source, field=field)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise FormatError("contains an unpaired surrogate", source=source, field=field) from None


def check_json(value: object, *, source: str, field: str) -> None:
    """Reject JSON values the database cannot store faithfully (see the module docstring)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise FormatError(f"nested deeper than {MAX_JSON_DEPTH}", source=source, field=field)
        if isinstance(item, str):
            check_text(item, limit=MAX_LONG_TEXT, source=source, field=field)
        elif isinstance(item, bool) or item is None or isinstance(item, int):
            continue
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                raise FormatError("holds a non-finite number", source=source, field=field)
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise FormatError("has a non-text key", source=source, field=field)
                check_text(key, limit=MAX_LONG_TEXT, source=source, field=field)
                stack.append((child, depth + 1))
        else:
            raise FormatError(f"holds {type_name(item)}", source=source, field=field)


def ref(fields: Fields, key: str, count: int, *, before: int | None = None) -> int:
    """A reference to an item of another list: an index in ``0..count-1`` (and below
    ``before`` when given, so references never form cycles)."""
    upper = count if before is None else min(count, before)
    if upper <= 0:
        raise fields.fail(key, "refers to an item, but there is none it could refer to")
    return fields.integer(key, minimum=0, maximum=upper - 1)


def opt_ref(fields: Fields, key: str, count: int, *, before: int | None = None) -> int | None:
    """A reference (see :func:`ref`) or ``null``."""
    if key in fields.data and fields.data[key] is None:
        return None
    return ref(fields, key, count, before=before)


def unique(keys: Sequence[object], *, source: str, field: str, what: str) -> None:
    """Raise on the first repeated key (the database would refuse the duplicate)."""
    seen: set[object] = set()
    for index, key in enumerate(keys):
        if key in seen:
            raise FormatError(
                f"repeats {what} {key!r:.80}", source=source, field=f"{field}[{index}]"
            )
        seen.add(key)
