"""Reading untrusted JSON into plain values, turning every failure into a FormatError.

Shared by every importer (cards, presets, world books, regex scripts, chats, native archives)
so that malformed bytes, bad UTF-8, deep nesting, lone surrogates and wrong field types all
surface the same way: file, field, problem.

Every decoded value passes :func:`check_decoded` once, where it enters: JSON escapes can spell
a lone UTF-16 surrogate (``"\\ud800"``) that no database, encoder or model API accepts, and
deep nesting breaks every recursive reader after the parser; both are refused here, with the
field path (``entries.3.content``, ``prompts[2].content``), before anything is stored.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Final

from engine.errors import FormatError

MAX_IMPORT_JSON_DEPTH: Final = 100
"""Most levels of nested arrays and objects an imported JSON document may have. Real
SillyTavern files nest a handful of levels; a native archive's stored values stay within
``archive_fields.MAX_JSON_DEPTH`` plus the few levels of the archive itself."""

_DEPTH_PATH_PARTS: Final = 3
"""Path parts an error about deep nesting shows."""
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def decode_text(data: bytes, *, source: str, field: str = "") -> str:
    """UTF-8 text (a leading BOM is dropped); invalid bytes raise FormatError."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"not UTF-8 text (byte {exc.start})", source=source, field=field
        ) from None


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def loads(text: str, *, source: str, field: str = "") -> object:
    """Parse JSON text and :func:`check_decoded` it; NaN/Infinity, nesting deeper than
    :data:`MAX_IMPORT_JSON_DEPTH`, lone surrogates and syntax errors raise FormatError."""
    try:
        value = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        raise _too_deep(source, field) from None
    except ValueError as exc:
        raise FormatError(f"invalid JSON: {exc}", source=source, field=field) from None
    check_decoded(value, source=source, field=field)
    return value


def _too_deep(source: str, field: str) -> FormatError:
    return FormatError(
        f"JSON nests deeper than MAX_IMPORT_JSON_DEPTH={MAX_IMPORT_JSON_DEPTH}",
        source=source,
        field=field,
    )


def _path(parts: tuple[object, ...], base: str) -> str:
    """``base`` followed by ``parts`` as a field path: ``entries.3.content``, ``prompts[2]``;
    under a place such as ``line 3`` the path follows a colon: ``line 3: chat_metadata.x``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out = f"{out}.{part}" if out else str(part)
    if not base or not out:
        return base or out
    if " " in base:
        return f"{base}: {out}"
    return f"{base}{out}" if out.startswith("[") else f"{base}.{out}"


def lone_surrogate_at(text: str) -> int | None:
    """The index of the first lone UTF-16 surrogate in ``text``, or None when it has none.
    (Decoded JSON joins escaped pairs into one character, so any surrogate left is alone.)"""
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    return None if found is None else found.start()


def check_decoded(value: object, *, source: str, field: str = "") -> None:
    """Refuse a decoded JSON value nesting deeper than :data:`MAX_IMPORT_JSON_DEPTH` or holding
    a lone surrogate in any text or key (FormatError naming the field path under ``field``).

    Iterative, so a value of any depth is walked without recursion."""
    stack: list[tuple[object, int, tuple[object, ...]]] = [(value, 0, ())]
    while stack:
        item, depth, parts = stack.pop()
        if isinstance(item, str):
            at = lone_surrogate_at(item)
            if at is not None:
                raise FormatError(
                    f"text holds a lone surrogate {item[at]!r} at character {at}",
                    source=source,
                    field=_path(parts, field),
                )
            continue
        if not isinstance(item, dict | list):
            continue
        if depth >= MAX_IMPORT_JSON_DEPTH:
            # Name where the deep part starts: the full path would be a hundred levels long.
            raise _too_deep(source, _path(parts[:_DEPTH_PATH_PARTS], field) + "...")
        if isinstance(item, list):
            stack.extend((child, depth + 1, (*parts, i)) for i, child in enumerate(item))
            continue
        for key, child in item.items():
            if isinstance(key, str) and lone_surrogate_at(key) is not None:
                raise FormatError(
                    f"key {key!r:.60} holds a lone surrogate",
                    source=source,
                    field=_path(parts, field),
                )
            stack.append((child, depth + 1, (*parts, key)))


def load_object(
    data: bytes | str, *, source: str, field: str = "", what: str = "a JSON object"
) -> dict[str, object]:
    """Parse bytes or text that must hold one JSON object; ``what`` names the object the
    caller expects (``"a preset object"``), so that valid JSON of another type is reported as
    what it is ("expected a preset object, got a string"), never as invalid JSON."""
    text = decode_text(data, source=source, field=field) if isinstance(data, bytes) else data
    value = loads(text, source=source, field=field)
    if not isinstance(value, dict):
        raise FormatError(f"expected {what}, got {type_name(value)}", source=source, field=field)
    return value


def type_name(value: object) -> str:
    """The JSON name of a value's type with its article, for error messages ("expected an
    object, got a string"; ``null`` has none)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def get_str(
    obj: Mapping[str, object], key: str, *, source: str, field: str, default: str = ""
) -> str:
    """A string field; missing or null gives ``default``, numbers are written as text."""
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)  # ST coerces loosely typed editors' output the same way
    raise FormatError(f"expected a string, got {type_name(value)}", source=source, field=field)


def get_bool(
    obj: Mapping[str, object], key: str, *, source: str, field: str, default: bool
) -> bool:
    """A boolean field; missing or null gives ``default``."""
    value = obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)  # JS truthiness, which is what ST applies to these flags
    raise FormatError(f"expected a boolean, got {type_name(value)}", source=source, field=field)


def as_int(value: object, *, source: str, field: str) -> int | None:
    """An optional integer: null, "" and missing give None; numeric strings are accepted."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise FormatError("expected a number, got a boolean", source=source, field=field)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise FormatError("expected a finite number", source=source, field=field)
        return int(value)
    if isinstance(value, str):
        try:
            return int(float(value.strip()))
        except (ValueError, OverflowError):
            pass
    raise FormatError(f"expected a number, got {value!r:.40}", source=source, field=field)


def get_str_list(
    obj: Mapping[str, object], key: str, *, source: str, field: str
) -> tuple[str, ...]:
    """A list of strings; a lone string becomes a one-item list; null or missing is empty."""
    value = obj.get(key)
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        raise FormatError(
            f"expected an array of strings, got {type_name(value)}", source=source, field=field
        )
    out: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise FormatError(
                f"expected a string, got {type_name(item)}", source=source, field=f"{field}[{i}]"
            )
        out.append(item)
    return tuple(out)
