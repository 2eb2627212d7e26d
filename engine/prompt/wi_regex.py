"""World info regex keys: JavaScript patterns compiled by :mod:`engine.prompt.jsregex` and
tested under a timeout, so a catastrophic key in an imported book cannot stall a turn.

A test draws on the turn's :class:`~engine.prompt.regex_budget.RegexBudget` when one is given:
once it is spent, regex keys do not match (and the budget's warning names them). Matching runs
with ``concurrent=True``, so the ``regex`` package releases the GIL while it backtracks and a
scan in a worker thread does not starve the event loop's thread.
"""

from __future__ import annotations

from engine.prompt.jsregex import JsRegex, JsRegexError, compile_js
from engine.prompt.regex_budget import RegexBudget, run_allowance

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
    compiled: JsRegex,
    text: str,
    *,
    timeout_s: float = KEY_REGEX_TIMEOUT_S,
    budget: RegexBudget | None = None,
) -> bool:
    """``regex.test(text)``: a search (a match at the start for sticky ``y``)."""
    limit = run_allowance(budget, timeout_s)
    if budget is not None and limit <= 0:
        budget.skip_key(_label(compiled))
        return False
    started = budget.now() if budget is not None else 0.0
    try:
        if compiled.sticky:
            found = compiled.pattern.match(text, timeout=limit, concurrent=True)
        else:
            found = compiled.pattern.search(text, timeout=limit, concurrent=True)
        return found is not None
    except TimeoutError:
        if budget is not None and limit < timeout_s:
            budget.skip_key(_label(compiled))  # cut short by the turn's budget, not its own limit
        return False
    finally:
        if budget is not None:
            budget.charge_since(started)


def _label(compiled: JsRegex) -> str:
    return f"/{compiled.source:.60}/{compiled.flags}"
