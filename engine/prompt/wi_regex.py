"""World info regex keys: JavaScript patterns compiled by :mod:`engine.prompt.jsregex` and
tested under a timeout, so a catastrophic key in an imported book cannot stall a turn."""

from __future__ import annotations

from engine.prompt.jsregex import JsRegex, JsRegexError, compile_js

# Wall-clock bound for one key test on one scan text; a key that times out does not match.
KEY_REGEX_TIMEOUT_S = 0.1


def compile_key_regex(pattern: str, flags: str) -> JsRegex | None:
    """Compile a JavaScript regex for a WI key; ``None`` when JavaScript would reject it (the
    key is then plain text, as in SillyTavern)."""
    try:
        return compile_js(pattern, flags)
    except JsRegexError:
        return None


def key_regex_matches(
    compiled: JsRegex, text: str, *, timeout_s: float = KEY_REGEX_TIMEOUT_S
) -> bool:
    """``regex.test(text)``: a search (a match at the start for sticky ``y``)."""
    try:
        if compiled.sticky:
            return compiled.pattern.match(text, timeout=timeout_s) is not None
        return compiled.pattern.search(text, timeout=timeout_s) is not None
    except TimeoutError:
        return False
