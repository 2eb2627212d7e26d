"""``{{if}}``: condition, ``!`` inversion, the top-level ``{{else}}`` split and branch evaluation.

``if`` receives its arguments unevaluated. The condition is resolved (or, when it uses
operators, evaluated as a Core Profile expression); only the chosen branch is evaluated, with
SillyTavern's post-processing, then trimmed and dedented unless the ``#`` flag is set. For a
SillyTavern condition the ``{{else}}``/``{{if}}`` names are matched case-sensitively, as in
SillyTavern; a Core Profile block matches them in any case.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from typing import TYPE_CHECKING

from engine.macros import diagnostics as d
from engine.macros.conditions import (
    ConditionError,
    ExpressionEvaluator,
    is_expression,
    parse_expression,
    st_truthy,
)
from engine.macros.jsvalues import JS_WHITESPACE
from engine.macros.nodes import Item, Macro, Scoped
from engine.macros.pairing import Level
from engine.macros.processing import postprocess, trim_scoped
from engine.macros.variables import display, get

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv

_VARIABLE_CONDITION = re.compile(r"([.$])([A-Za-z](?:[\w-]*\w)?)\Z")
#: Contents up to this many items are scanned for ``{{else}}`` directly (no index is built).
_SCAN_WINDOW = 64


def _first_else(items: list[Item], lo: int, hi: int, insensitive: bool) -> int:
    """The index of the first ``{{else}}`` in ``items[lo:hi]`` outside nested ``{{if}}``
    blocks, or -1. Depth counts ``if`` openers with one argument and ``if`` closers."""
    depth = 0
    for index in range(lo, hi):
        item = items[index]
        if item.__class__ is not Macro:
            continue
        macro: Macro = item
        name = macro.lname if insensitive else macro.name
        if macro.closing:
            if name == "if":
                depth -= 1
        elif name == "if" and macro.arg_count == 1:
            depth += 1
        elif name == "else" and depth == 0:
            return index
    return -1


def _level_else(level: Level, lo: int, hi: int, insensitive: bool) -> int:
    """:func:`_first_else` on a window of a level, from an index built once per level and
    case mode: the ``if`` depth before every item, and the ``else`` positions by that depth
    (a chain of thousands of nested blocks is split in logarithmic time per block)."""
    if not level.has_else or lo >= hi:
        return -1
    if hi - lo <= _SCAN_WINDOW:
        return _first_else(level.items, lo, hi, insensitive)
    index = level.if_index.get(insensitive)
    if index is None:
        index = _build_index(level, insensitive)
        level.if_index[insensitive] = index
    before, by_depth = index
    candidates = by_depth.get(before[lo])
    if not candidates:
        return -1
    k = bisect_left(candidates, lo)
    if k < len(candidates) and candidates[k] < hi:
        return candidates[k]
    return -1


def _build_index(level: Level, insensitive: bool) -> tuple[list[int], dict[int, list[int]]]:
    before: list[int] = []
    by_depth: dict[int, list[int]] = {}
    depth = 0
    for index, item in enumerate(level.items):
        before.append(depth)
        if item.__class__ is not Macro:
            continue
        macro: Macro = item
        name = macro.lname if insensitive else macro.name
        if macro.closing:
            if name == "if":
                depth -= 1
        elif name == "if" and macro.arg_count == 1:
            depth += 1
        elif name == "else":
            by_depth.setdefault(depth, []).append(index)
    before.append(depth)
    return before, by_depth


def _branches(
    env: MacroEnv, m: Macro, scoped: Scoped | None, insensitive: bool
) -> tuple[list[Item], list[Item] | None, int, int]:
    if scoped is not None:
        cached = scoped.split_cache.get(insensitive)
        if cached is not None:
            return cached
        # The content's window, not its pairing: a branch is paired on its own.
        level, lo, hi, start = scoped.level, scoped.lo, scoped.hi, scoped.opener.end
    else:
        content = m.args[1]
        if content.level is None:  # no macro inside: nothing to split or pair
            return content.items, None, content.start, -1
        level, lo, hi, start = content.level, content.lo, content.hi, content.start
    at = _level_else(level, lo, hi, insensitive)
    result = (
        level.pair(lo, hi if at < 0 else at, 1),
        None if at < 0 else level.pair(at + 1, hi, 1),
        start,
        -1 if at < 0 else level.items[at].end,  # type: ignore[union-attr]
    )
    if scoped is not None:
        scoped.split_cache[insensitive] = result
    return result


def eval_if(env: MacroEnv, m: Macro, scoped: Scoped | None, depth: int, delta: int) -> str:
    """Evaluate an ``if`` macro (inline, or scoped with its content)."""
    env.use("if")
    count = m.arg_count + (1 if scoped is not None else 0)
    if count != 2:
        block_raw = _raw(m, scoped)
        if scoped is None and m.arg_count == 1:
            env.warn(
                d.MACRO_SCOPED_BLOCK_UNCLOSED,
                "'{{if}}' has no '{{/if}}'; kept as written",
                m.start,
                "if",
                block_raw,
            )
        else:
            env.warn(
                d.MACRO_ARG_ARITY_INVALID,
                f"'if' takes a condition and content, got {count} argument(s)",
                m.start,
                "if",
                block_raw,
            )
        if env.tracing:
            env.add_trace("if", block_raw, block_raw, "if", "raw")
        return block_raw
    condition = m.args[0]
    cond_items = condition.items
    invert = False
    if condition.text.startswith("!"):
        invert = True
        first = cond_items[0]
        rest = first.lstrip(JS_WHITESPACE)[1:].lstrip(JS_WHITESPACE)  # type: ignore[union-attr]
        cond_items = ([rest] if rest else []) + cond_items[1:]
    cond_delta = delta + m.start - condition.start
    expression = is_expression(cond_items)
    if expression:
        try:
            tree = parse_expression(cond_items)
            truthy = ExpressionEvaluator(env, depth + 1, cond_delta).truth(tree)
        except ConditionError as exc:
            env.warn(exc.code, f"{exc.message}; the block is kept as written", m.start, "if")
            block_raw = _raw(m, scoped)
            if env.tracing:
                env.add_trace("if", block_raw, block_raw, "if", "raw")
            return block_raw
    else:
        plain = all(item.__class__ is str for item in cond_items)
        raw_value = (
            "".join(cond_items)  # type: ignore[arg-type]
            if plain
            else env.eval_items(cond_items, depth + 1, cond_delta)
        )
        truthy = st_truthy(_auto_resolve(env, postprocess(raw_value)))
    if invert:
        truthy = not truthy
    then_items, else_items, then_start, else_start = _branches(env, m, scoped, expression)
    if truthy:
        branch, start = then_items, then_start
    elif else_items is not None:
        branch, start = else_items, else_start
    else:
        if env.tracing:
            env.add_trace("if", _raw(m, scoped), "", "if", "else")
        return ""
    out = postprocess(env.eval_items(branch, depth + 1, delta + m.start - start))
    if not m.preserve:
        out = trim_scoped(out)
    if env.tracing:
        env.add_trace("if", _raw(m, scoped), out, "if", "then" if truthy else "else")
    return out


def _raw(m: Macro, scoped: Scoped | None) -> str:
    """The block as written (sliced only when needed: a deep chain would copy it per level)."""
    return m.src[m.start : (scoped or m).end]


def _auto_resolve(env: MacroEnv, value: str) -> str:
    """``{{if .x}}``/``{{if $x}}`` read variables; a registered 0-argument macro name runs."""
    match = _VARIABLE_CONDITION.match(value)
    if match:
        scope = "local" if match.group(1) == "." else "global"
        try:
            return display(get(env, scope, match.group(2)))  # type: ignore[arg-type]
        except Exception:  # a path error reads as missing here
            return ""
    definition = env.registry.get(value) if value and len(value) < 64 else None
    if definition is not None and definition.min_args == 0 and not definition.delay_args:
        return env.evaluate("{{" + value + "}}")
    return value
