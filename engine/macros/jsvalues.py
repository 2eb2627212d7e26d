"""JavaScript value semantics the macro language inherits: ``Number()``, ``String(number)``,
``JSON.stringify``, whitespace trimming and truthiness.

SillyTavern's variable store and its macros run on JavaScript values, so a faithful port has
to parse ``"0x10"`` as 16, print ``1e21`` as ``1e+21`` and trim exactly the characters
``String.prototype.trim`` trims (Python's ``str.strip`` also strips ``\\x1c``-``\\x1f``, which
would eat the else marker).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: The characters JavaScript's ``trim`` and the regex class ``\\s`` treat as whitespace.
JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)

_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)\Z")
_RADIX = re.compile(r"0([xXoObB])([0-9a-fA-F]+)\Z")
_RADIX_BASE = {"x": 16, "o": 8, "b": 2}
_NAN = float("nan")


def js_trim(text: str) -> str:
    """``String.prototype.trim``."""
    return text.strip(JS_WHITESPACE)


def js_trim_start(text: str) -> str:
    """``String.prototype.trimStart``."""
    return text.lstrip(JS_WHITESPACE)


def string_to_number(text: str) -> float:
    """``Number(text)`` for a string: NaN when it is not a JavaScript numeric literal."""
    s = text.strip(JS_WHITESPACE)
    if not s:
        return 0.0
    if _DECIMAL.match(s):
        return float(s)
    m = _RADIX.match(s)
    if m:
        try:
            return float(int(m.group(2), _RADIX_BASE[m.group(1).lower()]))
        except ValueError:
            return _NAN
    if s in ("Infinity", "+Infinity"):
        return math.inf
    if s == "-Infinity":
        return -math.inf
    return _NAN


def to_number(value: Any) -> float:
    """``Number(value)`` for any JSON-like value."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return string_to_number(value)
    if value is None:
        return 0.0
    if isinstance(value, list):
        # Number([]) is 0, Number([x]) is Number(String(x)); longer arrays are NaN.
        if not value:
            return 0.0
        if len(value) == 1 and not isinstance(value[0], dict | list):
            inner = value[0]
            return 0.0 if inner is None else string_to_number(to_display(inner))
        return _NAN
    return _NAN


def is_nan(value: float) -> bool:
    """``isNaN`` for an already converted number."""
    return value != value


def number_to_string(value: float | int) -> str:
    """``String(number)``: shortest round-trip digits, JavaScript's exponent rules."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if abs(value) < 10**21:
            return str(value)
        value = float(value)
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exp_text = repr(abs(value)).partition("e")
    exponent = int(exp_text) if exp_text else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part.rstrip("0")).lstrip("0") or "0"
    # Position of the decimal point relative to the first significant digit.
    leading_zeros = len(int_part + frac_part) - len((int_part + frac_part).lstrip("0"))
    point = len(int_part) - leading_zeros + exponent
    n = point
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    e = n - 1
    exp = f"e+{e}" if e >= 0 else f"e-{-e}"
    if k == 1:
        return sign + digits + exp
    return sign + digits[0] + "." + digits[1:] + exp


def js_number(value: float) -> int | float:
    """A number as stored after arithmetic: integral values become ``int`` (as JSON shows them)."""
    finite = value == value and value not in (math.inf, -math.inf)
    if finite and value == int(value) and abs(value) < 2**53:
        return int(value)
    return value


def _json_default(value: Any) -> Any:
    raise TypeError(f"value of type {type(value).__name__} is not JSON data")


def _normalise_json(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        if value != value or value in (math.inf, -math.inf):
            return None  # JSON.stringify writes null for NaN and Infinity
        return js_number(value) if value == int(value) else value
    if isinstance(value, dict):
        return {str(k): _normalise_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalise_json(v) for v in value]
    return str(value)


def json_stringify(value: Any) -> str:
    """Compact ``JSON.stringify`` (key order kept, non-ASCII kept, integral floats as ints)."""
    return json.dumps(
        _normalise_json(value), ensure_ascii=False, separators=(",", ":"), default=_json_default
    )


def to_display(value: Any) -> str:
    """How a macro prints a value: strings as is, numbers the JavaScript way, ``None`` as ``''``,
    booleans as ``true``/``false`` and structures as compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return number_to_string(value)
    return json_stringify(value)


def is_false_boolean(text: str) -> bool:
    """SillyTavern's ``isFalseBoolean``: ``off``, ``false`` or ``0``, trimmed, in any case."""
    return js_trim(text).lower() in ("off", "false", "0")


def js_falsy(value: Any) -> bool:
    """JavaScript's ``!value``."""
    if value is None or value is False:
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == 0 or value != value
    return isinstance(value, str) and value == ""
