"""Reading untrusted JSON into plain values, turning every failure into a FormatError.

Shared by the card, regex-script and chat importers so that malformed bytes, bad UTF-8, deep
nesting and wrong field types all surface the same way: file, field, problem.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from engine.errors import FormatError


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
    """Parse JSON text; NaN/Infinity, deep nesting and syntax errors raise FormatError."""
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except (ValueError, RecursionError) as exc:
        raise FormatError(f"invalid JSON: {exc}", source=source, field=field) from None


def load_object(data: bytes | str, *, source: str, field: str = "") -> dict[str, object]:
    """Parse bytes or text that must hold one JSON object."""
    text = decode_text(data, source=source, field=field) if isinstance(data, bytes) else data
    value = loads(text, source=source, field=field)
    if not isinstance(value, dict):
        raise FormatError(
            f"expected a JSON object, got {type_name(value)}", source=source, field=field
        )
    return value


def type_name(value: object) -> str:
    """The JSON name of a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


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
        raise FormatError("expected a number, got boolean", source=source, field=field)
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
