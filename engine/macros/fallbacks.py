"""What a macro becomes when it cannot simply run: call-local text macros, unknown names
(variable fallback, then raw with ``macro_unknown``), write macros refused by phase or access,
and the raw text of a failed macro with its nested results in place (SillyTavern prints that,
never the original)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine.macros import diagnostics as d
from engine.macros.jsvalues import to_display
from engine.macros.nodes import Macro, RawMacro, Scoped
from engine.macros.registry import MacroDef
from engine.macros.variables import MISSING, snapshot_value

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv


def eval_dynamic_text(
    env: MacroEnv, m: Macro, scoped: Scoped | None, value: str, depth: int, delta: int
) -> str:
    """A call-local macro given as text: it takes no arguments and is never re-scanned."""
    env.use(m.lname)
    if m.arg_count or scoped is not None:
        args = env.eval_args(m, depth, delta)
        if scoped is not None:
            args.append(env.eval_arg(scoped.content, depth + 1, delta))
        env.warn(
            d.MACRO_ARG_ARITY_INVALID,
            f"call-local macro '{m.name}' takes no arguments",
            m.start,
            m.lname,
        )
        return raw_resolved(m, args, scoped)
    if value == m.src[m.start : m.end]:
        env.warn(d.MACRO_CYCLE_DETECTED, f"'{m.name}' expands to itself", m.start, m.lname)
    if env.tracing:
        env.add_trace(m.lname, m.src[m.start : m.end], value, "macro")
    return value


def eval_unknown(env: MacroEnv, m: Macro, scoped: Scoped | None, depth: int, delta: int) -> str:
    """An unregistered name: its arguments still run; a bare name reads a variable (local
    view, then global, as at the start of the evaluation); otherwise it stays raw."""
    args = env.eval_args(m, depth, delta)
    if scoped is not None:
        args.append(env.eval_arg(scoped.content, depth + 1, delta))
    elif not args and not m.closing:
        # A bare name falls back to a variable: local view, then global (as it was when
        # this evaluation started).
        for scope in ("local", "global"):
            value = snapshot_value(env, scope, m.name)
            if value is not MISSING:
                env.use(m.name)
                text = to_display(value)
                if text == m.src[m.start : m.end]:
                    env.warn(d.MACRO_CYCLE_DETECTED, f"'{m.name}' expands to itself", m.start)
                return text
    if args and scoped is None:
        env.warn(
            d.MACRO_ARG_ARITY_INVALID,
            f"unknown macro '{m.name}' with {len(args)} argument(s); kept as written",
            m.start,
            m.name,
        )
    else:
        env.warn(d.MACRO_UNKNOWN, f"unknown macro '{m.name}'; kept as written", m.start, m.name)
    raw = raw_resolved(m, args, scoped)
    if env.tracing:
        env.add_trace(m.name, m.src[m.start : (scoped or m).end], raw, "raw", "raw")
    return raw


def blocked_write(env: MacroEnv, m: Macro, scoped: Scoped | None, definition: MacroDef) -> str:
    """A write macro where writes are not allowed: raw in read-only text, empty in ``commit``."""
    raw = m.src[m.start : (scoped or m).end]
    if env.write_block == "read_only":
        env.warn(
            d.MACRO_WRITE_FORBIDDEN,
            f"'{definition.name}' changes state and is not allowed in this text",
            m.start,
            definition.name,
            raw,
        )
        return raw
    env.warn(
        d.MACRO_EVAL_PHASE_DISALLOWED,
        f"macro '{definition.name}' is not allowed in phase {env.phase}",
        m.start,
        definition.name,
        raw,
    )
    return ""


def raw_resolved(m: Macro, args: list[str], scoped: Scoped | None) -> str:
    """The macro as written, with its nested macros replaced by their results."""
    src = m.src
    inline = m.args
    if m.plain_args is not None or all(a.plain is not None for a in inline):
        text = src[m.start : m.end]
    else:
        pieces = []
        pos = m.start
        for arg, value in zip(inline, args, strict=False):
            pieces.append(src[pos : arg.start])
            pieces.append(value)
            pos = arg.end
        pieces.append(src[pos : m.end])
        text = "".join(pieces)
    if scoped is not None:
        content = args[-1] if len(args) > m.arg_count else ""
        text += content + src[scoped.close_start : scoped.end]
    return text


def raw_message(raw: RawMacro) -> str:
    if raw.code == d.MACRO_UNMATCHED_CLOSING_BLOCK:
        return f"closing tag '{{{{/{raw.name}}}}}' has no opening tag; kept as written"
    return f"'{raw.name}' cannot take scoped content; both tags kept as written"


def arity_text(definition: MacroDef) -> str:
    if definition.list_args is not None:
        return f"it takes at least {definition.min_args + definition.list_args[0]}"
    if definition.min_args == definition.max_args:
        return f"it takes {definition.max_args}"
    return f"it takes {definition.min_args} to {definition.max_args}"


def normalize(value: object) -> str:
    """SillyTavern's ``normalizeMacroResult``."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return value.isoformat()
    return to_display(value)


def dynamic_def(name: str, value: Any) -> MacroDef:
    """A call-local macro given as a function: called with the env, no arguments."""

    def handler(env: MacroEnv, args: list[str]) -> object:
        return value(env)

    return MacroDef(name=name, handler=handler)
