"""Typed reads of fields from decoded JSON, raising :class:`FormatError` with file and field.

SillyTavern files are loose: numbers arrive as strings, booleans as ``null``, lists as comma
strings. These helpers accept what SillyTavern itself accepts and reject the rest with an error
naming the file (``source``), the field path and the problem, so an importer never crashes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from engine.errors import FormatError


class ObjectFields:
    """One decoded JSON object and where it stands, the base of this module's loose reader and
    the native archive's strict one (:class:`engine.formats.archive_fields.Fields`): ``source``
    names the file and ``path`` prefixes every field name in errors."""

    __slots__ = ("data", "path", "source")

    def __init__(self, data: object, *, source: str, path: str) -> None:
        if not isinstance(data, Mapping):
            raise FormatError(
                f"expected a JSON object, got {self.describe(data)}", source=source, field=path
            )
        self.data: Mapping[str, Any] = data
        self.source = source
        self.path = path

    @staticmethod
    def describe(value: object) -> str:
        """The JSON name of ``value``'s type, as this reader's messages word it."""
        return type_name(value)

    def where(self, key: str) -> str:
        """The dotted path of ``key`` inside this object."""
        return f"{self.path}.{key}" if self.path else key

    def fail(self, key: str, problem: str) -> FormatError:
        """An error about field ``key``."""
        return FormatError(problem, source=self.source, field=self.where(key))


class FieldReader(ObjectFields):
    """Reads fields of one JSON object loosely, as SillyTavern does."""

    __slots__ = ()

    def has(self, key: str) -> bool:
        """Whether ``key`` is present (even if ``null``)."""
        return key in self.data

    def string(self, key: str, default: str = "") -> str:
        """A text field; ``null`` and absent give ``default``; numbers are written as text."""
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            raise self.fail(key, f"expected text, got {type_name(value)}")
        if isinstance(value, int | float):
            return str(value)
        raise self.fail(key, f"expected text, got {type_name(value)}")

    def boolean(self, key: str, default: bool = False) -> bool:
        """A flag; ``null`` and absent give ``default``; 0/1 and "true"/"false" are accepted."""
        value = self.optional_bool(key)
        return default if value is None else value

    def optional_bool(self, key: str) -> bool | None:
        """A flag that may be unset (``None`` means "use the global setting")."""
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in ("true", "false", ""):
            text = value.strip().lower()
            return None if text == "" else text == "true"
        raise self.fail(key, f"expected true or false, got {value!r:.40}")

    def number(self, key: str, default: float) -> float:
        """A finite number; numeric strings are accepted (SillyTavern coerces them)."""
        value = self.optional_number(key)
        return default if value is None else value

    def optional_number(self, key: str) -> float | None:
        """A finite number or ``None`` when absent, ``null`` or an empty string."""
        value = self.data.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, bool):
            return float(value)
        if isinstance(value, int | float):
            result = float(value)
        elif isinstance(value, str):
            try:
                result = float(value.strip())
            except ValueError:
                raise self.fail(key, f"expected a number, got {value!r:.40}") from None
        else:
            raise self.fail(key, f"expected a number, got {type_name(value)}")
        if not math.isfinite(result):
            raise self.fail(key, "expected a finite number")
        return result

    def integer(self, key: str, default: int) -> int:
        """A whole number (fractions are truncated, as JavaScript's parseInt does)."""
        value = self.optional_int(key)
        return default if value is None else value

    def optional_int(self, key: str) -> int | None:
        """A whole number or ``None``."""
        value = self.optional_number(key)
        return None if value is None else int(value)

    def strings(self, key: str) -> tuple[str, ...]:
        """A list of texts; a single string becomes a one-item list, ``null`` an empty one."""
        value = self.data.get(key)
        if value is None:
            return ()
        if isinstance(value, str):
            return (value,) if value else ()
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list of texts, got {type_name(value)}")
        out: list[str] = []
        for index, item in enumerate(value):
            if item is None:
                continue
            if isinstance(item, str):
                out.append(item)
            elif isinstance(item, int | float) and not isinstance(item, bool):
                out.append(str(item))
            else:
                raise self.fail(f"{key}[{index}]", f"expected text, got {type_name(item)}")
        return tuple(out)

    def mapping(self, key: str) -> Mapping[str, Any]:
        """A nested object; ``null`` and absent give an empty mapping."""
        value = self.data.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(key, f"expected an object, got {type_name(value)}")
        return value

    def child(self, key: str) -> FieldReader:
        """A reader for the nested object at ``key`` (absent or ``null`` reads as empty)."""
        return FieldReader(self.mapping(key), source=self.source, path=self.where(key))

    def items(self, key: str) -> list[Any]:
        """A list of anything; ``null`` and absent give an empty list."""
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(key, f"expected a list, got {type_name(value)}")
        return value


def type_name(value: object) -> str:
    """The JSON name of a decoded value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def merge_known(
    raw: Mapping[str, Any],
    values: Mapping[str, Any],
    defaults: Mapping[str, Any],
    imported: Mapping[str, Any],
) -> dict[str, Any]:
    """Export helper: the original object with changed known fields written back.

    ``values`` are the known fields now, ``imported`` what they were right after parsing. An
    unchanged field keeps its original spelling (``"1"`` stays ``"1"``); a changed one is
    written; a new object only gets the fields that differ from ``defaults``.
    """
    out = dict(raw)
    for key, value in values.items():
        if key in imported and imported[key] == value:
            continue
        if key in raw or value != defaults.get(key, _MISSING):
            out[key] = value
    return out


_MISSING = object()
