"""``{{if}}``: condition, ``!`` inversion, the top-level ``{{else}}`` split and branch evaluation.

``if`` receives its arguments unevaluated. The condition is resolved (or, when it uses
operators, evaluated as a Core Profile expression); only the chosen branch is evaluated, with
SillyTavern's post-processing, then trimmed and dedented unless the ``#`` flag is set. For a
SillyTavern condition the ``{{else}}``/``{{if}}`` names are matched case-sensitively, as in
SillyTavern; a Core Profile block matches them in any case.
"""

from __future__ import annotations

import re
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
from engine.macros.pairing import pair_items
from engine.macros.processing import postprocess, trim_scoped
from engine.macros.variables import display, get

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv

_VARIABLE_CONDITION = re.compile(r"([.$])([A-Za-z](?:[\w-]*\w)?)\Z")


def split_else(items: list[Item], insensitive: bool) -> tuple[list[Item], list[Item] | None, int]:
    """Split content at its first top-level ``{{else}}``: (then, else or None, else end)."""
    depth = 0
    for index, item in enumerate(items):
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
            return items[:index], items[index + 1 :], macro.end
    return items, None, -1


def _branches(
    env: MacroEnv, m: Macro, scoped: Scoped | None, insensitive: bool
) -> tuple[list[Item], list[Item] | None, int, int]:
    if scoped is not None:
        cached = scoped.split_cache.get(insensitive)
        if cached is not None:
            return cached
        raw_items = scoped.content.raw_items
        start = scoped.content.start
    else:
        raw_items = m.args[1].raw_items
        start = m.args[1].start
    then_raw, else_raw, else_start = split_else(raw_items, insensitive)
    can_accept = env.registry.can_accept
    result = (
        pair_items(m.src, then_raw, can_accept),
        None if else_raw is None else pair_items(m.src, else_raw, can_accept),
        start,
        else_start,
    )
    if scoped is not None:
        scoped.split_cache[insensitive] = result
    return result


def eval_if(env: MacroEnv, m: Macro, scoped: Scoped | None, depth: int, delta: int) -> str:
    """Evaluate an ``if`` macro (inline, or scoped with its content)."""
    env.use("if")
    count = m.arg_count + (1 if scoped is not None else 0)
    block_raw = m.src[m.start : (scoped or m).end]
    if count != 2:
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
            env.add_trace("if", block_raw, "", "if", "else")
        return ""
    out = postprocess(env.eval_items(branch, depth + 1, delta + m.start - start))
    if not m.preserve:
        out = trim_scoped(out)
    if env.tracing:
        env.add_trace("if", block_raw, out, "if", "then" if truthy else "else")
    return out


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
