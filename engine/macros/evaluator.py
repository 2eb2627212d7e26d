"""The tree-walking evaluator: ``MacroEnv`` holds one evaluation's state and walks items.

Evaluation is left to right; a macro's arguments are evaluated before it (even when it turns
out unknown or invalid, as in SillyTavern), then its scoped content, then its handler. Macro
output is never re-scanned. Every document evaluation and every macro costs a step; depth
grows by one per argument, branch and content level; both are bounded by :class:`Limits`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal, assert_never, get_args

from engine.macros import diagnostics as d
from engine.macros import fallbacks, variables
from engine.macros.context import MacroContext
from engine.macros.diagnostics import MacroTrace, MacroWarning, Mutation, Phase
from engine.macros.ifblock import eval_if
from engine.macros.limits import (
    CHARS_PER_STEP,
    MAX_TRACES,
    MAX_WARNINGS,
    OUTPUT_WORK_FACTOR,
    Limits,
)
from engine.macros.nodes import (
    Arg,
    Item,
    Macro,
    RawMacro,
    Scoped,
    Template,
    VarExpr,
    first_position,
    raw_join,
)
from engine.macros.processing import postprocess, trim_scoped
from engine.macros.registry import (
    MacroArgumentError,
    MacroDef,
    MacroKeepRaw,
    MacroValueMissing,
    Registry,
)
from engine.macros.shorthand import eval_shorthand

#: Access to state-changing macros: ``full``, ``read_only`` (user-authored platform text:
#: write macros stay raw with a warning) or ``off`` (no macro is evaluated).
Access = Literal["full", "read_only", "off"]
ACCESS_MODES: tuple[Access, ...] = get_args(Access)


class MacroEnv:
    """The environment of one evaluation, handed to every macro handler.

    Handlers read ``context``, ``user``/``char``/``group`` (with overrides applied), ``now``,
    ``phase`` and the ``call_*`` attributes describing the current call (``call_name``,
    ``call_scoped``, ``call_flags``, ``call_position``), and may call :meth:`evaluate` for nested
    text and :meth:`warn` to report a problem.
    """

    def __init__(
        self,
        context: MacroContext,
        *,
        registry: Registry,
        phase: Phase,
        limits: Limits,
        access: Access,
        original: str | None,
        dynamic: dict[str, Any],
        post_process: Callable[[str], str] | None,
        replace_character_card: bool,
        trace: bool,
        user: str,
        char: str,
        group: str | None,
        now: datetime,
        parse: Callable[[str], Template],
    ) -> None:
        self.context = context
        self.registry = registry
        self.phase: Phase = phase
        self.limits = limits
        self.access: Access = access
        self.original = original
        self.original_used = False
        self.dynamic = dynamic
        self.post_process = post_process
        self.replace_character_card = replace_character_card
        self.tracing = trace
        self.user = user
        self.char = char
        self.group = group
        self.now = now
        self.parse = parse
        self.max_depth = limits.max_depth
        self.max_steps = limits.max_steps
        self.max_chars = limits.max_output_chars
        self.check_len = min(limits.max_output_chars, CHARS_PER_STEP)
        self.steps = 0
        self.produced = 0
        self.warnings: list[MacroWarning] = []
        self.warning_count = 0
        self._warned: set[str] = set()
        self.mutations: list[Mutation] = []
        self.mutation_count = 0
        self.traces: list[MacroTrace] = []
        self.used_names: dict[str, None] = {}
        self.before_local: dict[str, Any] = {}
        self.before_global: dict[str, Any] = {}
        self.card_cache: dict[str, str] = {}
        self.template: Template | None = None
        self.evaluating: list[str] = []
        if access == "read_only":
            self.write_block: str | None = "read_only"
        elif phase == "commit":
            self.write_block = "phase"
        else:
            self.write_block = None
        self.call_name = ""
        self.call_scoped = False
        self.call_flags = ""
        self.call_position = 0

    # -- reporting ---------------------------------------------------------------------------

    def warn(
        self, code: str, message: str, position: int | None = None, name: str = "", raw: str = ""
    ) -> None:
        """Report a warning at ``position`` (the current call's position by default)."""
        self.warning_count += 1
        if len(self.warnings) < MAX_WARNINGS:
            where = self.call_position if position is None else position
            if self.template is not None:  # warnings point into the text as written
                where = self.template.original_position(where)
            self.warnings.append(
                MacroWarning(
                    code=code, message=message, position=where, macro_name=name, raw_text=raw
                )
            )

    def warn_once(self, code: str, message: str, position: int | None = None) -> None:
        """Report a warning only the first time its code comes up in this evaluation."""
        if code not in self._warned:
            self._warned.add(code)
            self.warn(code, message, position)

    def add_trace(
        self,
        name: str,
        raw: str,
        resolved: str,
        kind: d.TraceKind,
        branch: d.TraceBranch | None = None,
    ) -> None:
        """Record a trace (only when tracing was asked for)."""
        if len(self.traces) < MAX_TRACES:
            self.traces.append(
                MacroTrace(
                    macro_name=name,
                    raw_text=raw,
                    resolved_text=resolved,
                    phase=self.phase,
                    source_kind=kind,
                    selected_branch=branch,
                )
            )

    def use(self, name: str) -> None:
        """Note a macro name as used (first-use order is kept)."""
        if name not in self.used_names:
            self.used_names[name] = None

    # -- limits ------------------------------------------------------------------------------

    def step(self, position: int) -> bool:
        """Take one step; False (and a warning) when the budget is spent."""
        self.steps += 1
        if self.steps > self.max_steps:
            self.warn_once(
                d.MACRO_STEP_LIMIT_EXCEEDED,
                f"evaluation stopped after {self.max_steps} steps (limit max_steps); "
                "the rest is kept as written",
                position,
            )
            return False
        return True

    def limit_text(self, text: str, position: int) -> str:
        """Cut produced text to ``max_output_chars`` (warning on the first cut). Large texts
        also cost steps, and once the large texts made so far pass
        ``OUTPUT_WORK_FACTOR * max_output_chars`` evaluation stops (memory stays bounded)."""
        if len(text) > CHARS_PER_STEP:
            self.steps += len(text) // CHARS_PER_STEP
            self.produced += len(text)
            if self.produced > OUTPUT_WORK_FACTOR * self.max_chars:
                self.steps = max(self.steps, self.max_steps)
        if len(text) <= self.max_chars:
            return text
        self.warn_once(
            d.MACRO_EXPANDED_LENGTH_LIMIT_EXCEEDED,
            f"output cut to {self.max_chars} characters (limit max_output_chars)",
            position,
        )
        return text[: self.max_chars]

    # -- documents ---------------------------------------------------------------------------

    def eval_items(self, items: list[Item], depth: int, delta: int) -> str:
        """Evaluate a document level and concatenate the results."""
        if depth > self.max_depth:
            position = first_position(items)
            self.warn(
                d.MACRO_DEPTH_LIMIT_EXCEEDED,
                f"nesting deeper than {self.max_depth} (limit max_depth); kept as written",
                position,
            )
            return raw_join(items)
        if not self.step(first_position(items)):
            return raw_join(items)
        parts: list[str] = []
        append = parts.append
        # One branch per kind of ``Item``, checked exhaustive by mypy: ``type(item) is Kind``
        # narrows because the node classes are final, so a kind added to ``Item`` without a
        # branch here reaches ``assert_never`` with a type error. A ``match`` on the classes
        # would check the same but made this loop about 2.8x slower (Python 3.11).
        for item in items:
            if isinstance(item, str):
                append(item)
            elif type(item) is Macro:
                append(self.eval_macro(item, None, depth, delta))
            elif type(item) is Scoped:
                append(self.eval_macro(item.opener, item, depth, delta))
            elif type(item) is VarExpr:
                append(eval_shorthand(self, item, depth, delta))
            elif type(item) is RawMacro:
                if item.code is not None:
                    self.warn(
                        item.code, fallbacks.raw_message(item), item.start, item.name, item.text
                    )
                if self.tracing:
                    self.add_trace(item.name, item.text, item.text, "raw", "raw")
                append(item.text)
            else:
                assert_never(item)
        out = "".join(parts)
        if len(out) > self.check_len:
            out = self.limit_text(out, first_position(items))
        return out

    def eval_args(self, m: Macro, depth: int, delta: int) -> list[str]:
        """A macro's inline arguments, left to right, one level deeper. A plain argument needs
        no evaluation but still counts as a document (a step, and the depth check), so step
        and depth accounting match the Core Profile's."""
        plain = m.plain_args
        if plain is not None:
            if plain:
                self._charge_plain(len(plain), m.start, depth)
            return list(plain)
        out: list[str] = []
        for arg in m.args:
            if arg.plain is not None:
                self._charge_plain(1, arg.start, depth)
                out.append(arg.plain)
            else:
                out.append(self.eval_items(arg.items, depth + 1, delta))
        return out

    def _charge_plain(self, count: int, position: int, depth: int) -> None:
        if depth + 1 > self.max_depth:
            self.warn(
                d.MACRO_DEPTH_LIMIT_EXCEEDED,
                f"nesting deeper than {self.max_depth} (limit max_depth); kept as written",
                position,
            )
        self.steps += count
        if self.steps > self.max_steps:
            self.warn_once(
                d.MACRO_STEP_LIMIT_EXCEEDED,
                f"evaluation stopped after {self.max_steps} steps (limit max_steps); "
                "the rest is kept as written",
                position,
            )

    def eval_arg(self, arg: Arg, depth: int, delta: int) -> str:
        """An argument's value (plain text costs nothing)."""
        plain = arg.plain
        if plain is not None:
            return plain
        return self.eval_items(arg.items, depth, delta)

    # -- macros ------------------------------------------------------------------------------

    def eval_macro(self, m: Macro, scoped: Scoped | None, depth: int, delta: int) -> str:
        """Evaluate one macro call (``scoped`` when it was paired with a closing tag)."""
        if not self.step(m.start):
            return scoped.src[scoped.start : scoped.end] if scoped else m.src[m.start : m.end]
        lname = m.lname
        dyn = self.dynamic.get(lname) if self.dynamic else None
        definition: MacroDef | None
        if dyn is not None:
            if dyn.__class__ is str:
                return fallbacks.eval_dynamic_text(self, m, scoped, dyn, depth, delta)
            definition = dyn if isinstance(dyn, MacroDef) else fallbacks.dynamic_def(lname, dyn)
        else:
            definition = self.registry.lookup(lname)
        if definition is None:
            return fallbacks.eval_unknown(self, m, scoped, depth, delta)
        if definition.delay_args:
            return eval_if(self, m, scoped, depth, delta)
        if definition.writes and self.write_block is not None:
            return fallbacks.blocked_write(self, m, scoped, definition)
        args = self.eval_args(m, depth, delta)
        if scoped is not None:
            content = self.eval_arg(scoped.content, depth + 1, delta)
            args.append(content if m.preserve else trim_scoped(content))
        name = definition.name
        if name not in self.used_names:
            self.used_names[name] = None
        if definition.strict and not definition.arity_ok(len(args)):
            self.warn(
                d.MACRO_ARG_ARITY_INVALID,
                f"macro '{m.name}' got {len(args)} argument(s); "
                + fallbacks.arity_text(definition),
                m.start,
                name,
            )
            return fallbacks.raw_resolved(m, args, scoped)
        if definition.typed and (problem := definition.type_error(args)):
            self.warn(d.MACRO_ARG_TYPE_INVALID, f"macro '{m.name}': {problem}", m.start, name)
            return fallbacks.raw_resolved(m, args, scoped)
        self.call_name = name
        self.call_scoped = scoped is not None
        self.call_flags = m.flags
        self.call_position = m.start + delta
        try:
            result = definition.handler(self, args)
        except MacroArgumentError as exc:
            self.warn(d.MACRO_ARG_TYPE_INVALID, f"macro '{m.name}': {exc}", m.start, name)
            return fallbacks.raw_resolved(m, args, scoped)
        except MacroKeepRaw:
            return fallbacks.raw_resolved(m, args, scoped)
        except MacroValueMissing as exc:
            self.warn(d.MACRO_VALUE_MISSING, f"macro '{m.name}': {exc}", m.start, name)
            return fallbacks.raw_resolved(m, args, scoped)
        except RecursionError:
            raise
        except Exception as exc:  # an extension handler failed: keep the macro raw
            self.warn(
                d.MACRO_INTERNAL_ERROR,
                f"macro '{m.name}' failed: {type(exc).__name__}: {exc}",
                m.start,
                name,
            )
            return fallbacks.raw_resolved(m, args, scoped)
        text = result if result.__class__ is str else fallbacks.normalize(result)
        if self.post_process is not None:
            text = self.post_process(text)
        if len(text) > self.check_len:
            text = self.limit_text(text, m.start)
        if self.tracing:
            self.add_trace(name, m.src[m.start : (scoped or m).end], text, "macro")
        return text

    # -- variables for extension handlers ---------------------------------------------------

    def get_variable(self, name: str, scope: d.Scope = "local") -> Any:
        """A variable as macros read it (numeric text coerced; ``''`` when missing)."""
        try:
            return variables.get(self, scope, name)
        except Exception:  # a bad path reads as missing for handlers
            return ""

    def set_variable(self, name: str, value: Any, scope: d.Scope = "local") -> bool:
        """Write a variable under the same rules as ``setvar`` (phase, access, budget);
        False when the write was refused."""
        if self.write_block is not None or not name:
            self.warn(
                d.MACRO_WRITE_FORBIDDEN
                if self.write_block == "read_only"
                else d.MACRO_EVAL_PHASE_DISALLOWED,
                f"write to '{name}' refused in this evaluation",
            )
            return False
        try:
            return variables.set_value(self, scope, name, value, self.call_name or "extension")
        except Exception as exc:
            self.warn(d.MACRO_ARG_TYPE_INVALID, f"write to '{name}' refused: {exc}")
            return False

    # -- nested evaluation for handlers ------------------------------------------------------

    def evaluate(self, text: str, *, replace_character_card: bool | None = None) -> str:
        """Evaluate another text in this environment (shared variables, limits and reports),
        with SillyTavern's pre- and post-processing, as ``substituteParams`` would."""
        if not text:
            return ""
        if text in self.evaluating:
            self.warn(d.MACRO_CYCLE_DETECTED, "a macro's value expands to itself; kept as written")
            return text
        saved_card = self.replace_character_card
        saved_template = self.template
        if replace_character_card is not None:
            self.replace_character_card = replace_character_card
        self.evaluating.append(text)
        try:
            template = self.parse(text)
            self.template = template
            out = self.eval_items(template.items, len(self.evaluating), 0)
            return postprocess(out)
        finally:
            self.evaluating.pop()
            self.template = saved_template
            self.replace_character_card = saved_card
