"""Variable shorthand: ``{{.x}}`` (local) and ``{{$x}}`` (global) with SillyTavern's operators.

``=`` sets, ``+=`` adds (number, JSON-array push or text append), ``-=`` subtracts a number,
``++``/``--`` add one and return the new value, ``||``/``??`` fall back lazily (the value is
only evaluated when needed), ``||=``/``??=`` also assign, ``==``/``!=`` compare the coerced
text, ``> >= < <=`` compare numbers (``false`` and a warning when either side is not one).
Names may be Core Profile paths (``.a.b``, ``$a['k']``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.macros import diagnostics as d
from engine.macros import variables as v
from engine.macros.jsvalues import is_false_boolean, is_nan, js_falsy, to_number
from engine.macros.nodes import VarExpr
from engine.macros.paths import PathError

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv

_WRITES = frozenset({"=", "+=", "-=", "++", "--", "||=", "??="})
_SOURCE = {"local": "setvar", "global": "setglobalvar"}
#: The variable macro each operator stands for (reported in ``used_names``).
_USED_NAME = {
    "=": "setvar",
    "||=": "setvar",
    "??=": "setvar",
    "+=": "addvar",
    "-=": "addvar",
    "++": "incvar",
    "--": "decvar",
}


def _falsy(value: Any) -> bool:
    return js_falsy(value) or is_false_boolean(v.display(value))


def eval_shorthand(env: MacroEnv, node: VarExpr, depth: int, delta: int) -> str:
    """Evaluate one shorthand node."""
    if not env.step(node.start):
        return node.src[node.start : node.end]
    scope: d.Scope = node.scope  # type: ignore[assignment]
    env.call_position = node.start + delta
    op = node.op
    name = node.name
    env.use(
        _USED_NAME.get(op, "getvar").replace("var", "globalvar" if scope == "global" else "var")
    )
    if op in _WRITES and env.write_block is not None:
        raw = node.src[node.start : node.end]
        if env.write_block == "read_only":
            env.warn(
                d.MACRO_WRITE_FORBIDDEN,
                f"'{raw}' changes a variable and is not allowed in this text",
                node.start,
                op,
                raw,
            )
            return raw
        env.warn(
            d.MACRO_EVAL_PHASE_DISALLOWED,
            f"variable write '{raw}' is not allowed in phase {env.phase}",
            node.start,
            op,
            raw,
        )
        return ""
    try:
        return _apply(env, node, scope, op, name, depth, delta)
    except PathError as exc:
        code = d.MACRO_PARSE_FAILED if exc.code == "parse" else d.MACRO_ARG_TYPE_INVALID
        env.warn(code, exc.message, node.start, name)
        return node.src[node.start : node.end]


def _value(env: MacroEnv, node: VarExpr, depth: int, delta: int) -> str:
    arg = node.value
    if arg is None:
        return ""
    return env.eval_arg(arg, depth + 1, delta)


def _apply(
    env: MacroEnv, node: VarExpr, scope: d.Scope, op: str, name: str, depth: int, delta: int
) -> str:
    source = _SOURCE[scope]
    if op == "get":
        return v.display(v.get(env, scope, name)) if name else ""
    if op == "=":
        v.set_value(env, scope, name, _value(env, node, depth, delta), source)
        return ""
    if op == "+=":
        v.add(env, scope, name, _value(env, node, depth, delta), source)
        return ""
    if op == "-=":
        text = _value(env, node, depth, delta)
        number = to_number(text)
        if is_nan(number):
            env.warn(
                d.MACRO_ARG_TYPE_INVALID,
                f"'-=' needs a number, got {text!r}; '{name}' is unchanged",
                node.start,
                name,
            )
            return ""
        v.add(env, scope, name, -number, source)
        return ""
    if op in ("++", "--"):
        result = v.add(env, scope, name, 1 if op == "++" else -1, source)
        return "" if result is None else v.display(result)
    if op in ("||", "||="):
        current = v.get(env, scope, name)
        if not _falsy(current):
            return v.display(current)
        fallback = _value(env, node, depth, delta)
        if op == "||=":
            v.set_value(env, scope, name, fallback, source)
        return fallback
    if op in ("??", "??="):
        if v.has(env, scope, name):
            return v.display(v.get(env, scope, name))
        fallback = _value(env, node, depth, delta)
        if op == "??=":
            v.set_value(env, scope, name, fallback, source)
        return fallback
    current = v.get(env, scope, name)
    text = _value(env, node, depth, delta)
    if op == "==":
        return "true" if v.display(current) == text else "false"
    if op == "!=":
        return "false" if v.display(current) == text else "true"
    left = to_number(current)
    right = to_number(text)
    if is_nan(left) or is_nan(right):
        env.warn(
            d.MACRO_ARG_TYPE_INVALID,
            f"'{op}' compares numbers; '{name}' or {text!r} is not one",
            node.start,
            name,
        )
        return "false"
    if op == ">":
        result = left > right
    elif op == ">=":
        result = left >= right
    elif op == "<":
        result = left < right
    else:
        result = left <= right
    return "true" if result else "false"
