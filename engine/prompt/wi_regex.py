"""Compiling a world info regex key (JavaScript syntax) into a Python pattern.

The thorough JavaScript-to-Python translation lives in :mod:`engine.prompt.jsregex` (owned by
the regex-script code). Until that module is available this file translates the differences that
matter for keys: ASCII ``\\w``/``\\d``/``\\b``, ``$`` as end of text, ``.`` not crossing line
terminators, ``(?<name>`` groups; anything Python rejects makes the key plain text, as an invalid
regex does in SillyTavern.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

_WORD = "A-Za-z0-9_"
_SIMPLE = {
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "d": "[0-9]",
    "D": "[^0-9]",
    "b": f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))",
    "B": f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))",
}
_IN_CLASS = {"w": _WORD, "d": "0-9"}


def _jsregex_compiler() -> Any:
    try:
        module = importlib.import_module("engine.prompt.jsregex")
    except ImportError:
        return None
    return getattr(module, "compile_js_regex", None)


def compile_key_regex(pattern: str, flags: str) -> re.Pattern[str] | None:
    """Compile a JavaScript regex for a WI key; ``None`` when it is not valid."""
    shared = _jsregex_compiler()
    if shared is not None:
        try:
            compiled = shared(pattern, flags)
        except Exception:  # noqa: BLE001 - an invalid key is plain text, whatever the reason
            return None
        return compiled if isinstance(compiled, re.Pattern) else None
    return _fallback_compile(pattern, flags)


def _fallback_compile(pattern: str, flags: str) -> re.Pattern[str] | None:
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if in_class and nxt in _IN_CLASS:
                out.append(_IN_CLASS[nxt])
            elif not in_class and nxt in _SIMPLE:
                out.append(_SIMPLE[nxt])
            else:
                out.append(ch + nxt)
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
            out.append(ch)
        elif ch == "[":
            in_class = True
            out.append(ch)
        elif ch == "." and "s" not in flags:
            out.append("[^\\n\\r\\u2028\\u2029]")
        elif ch == "$" and "m" not in flags:
            out.append("\\Z")
        elif pattern.startswith("(?<", i) and pattern[i + 3 : i + 4] not in ("=", "!"):
            out.append("(?P<")
            i += 3
            continue
        else:
            out.append(ch)
        i += 1
    py_flags = 0
    if "i" in flags:
        py_flags |= re.IGNORECASE
    if "m" in flags:
        py_flags |= re.MULTILINE
    if "s" in flags:
        py_flags |= re.DOTALL
    try:
        return re.compile("".join(out), py_flags)
    except (re.error, OverflowError, RecursionError):
        return None
