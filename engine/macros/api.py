"""``evaluate``: the one entry point of the macro engine, and its result.

Phases (DESIGN §4): ``import`` evaluates nothing (legacy markers are only rewritten);
``preview`` and ``dry_run`` run reads and apply writes to the given context (the caller's
working copy), reporting them as *preview* mutations never to be persisted; ``assemble``
applies writes and reports them as *staged* mutations for the turn to commit; ``commit`` runs
no write (each write macro gives ``''`` and ``macro_eval_phase_disallowed``): the turn applies
the frozen staged log instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from engine.macros import diagnostics as d
from engine.macros.cache import DEFAULT_CACHE, TemplateCache
from engine.macros.context import MacroContext
from engine.macros.diagnostics import MacroTrace, MacroWarning, Mutation, Phase
from engine.macros.evaluator import ACCESS_MODES, Access, MacroEnv
from engine.macros.limits import DEFAULT_LIMITS, Limits
from engine.macros.nodes import Template
from engine.macros.processing import has_legacy_marker, postprocess, preprocess
from engine.macros.registry import Registry, default_registry


@dataclass(frozen=True, slots=True, kw_only=True)
class MacroResult:
    """What an evaluation produced.

    ``mutations`` holds every recorded write in order; ``staged_mutations`` the same in
    ``assemble`` (to commit with the turn) and ``preview_mutations`` the same in ``preview``/
    ``dry_run`` (never to persist). ``used_names`` lists canonical macro names in first-use
    order; ``traces`` is filled only when tracing was asked for.
    """

    text: str
    warnings: tuple[MacroWarning, ...] = ()
    mutations: tuple[Mutation, ...] = ()
    staged_mutations: tuple[Mutation, ...] = ()
    preview_mutations: tuple[Mutation, ...] = ()
    traces: tuple[MacroTrace, ...] = ()
    used_names: tuple[str, ...] = ()
    steps: int = 0

    @property
    def warning_codes(self) -> list[str]:
        """The warning codes in order."""
        return [warning.code for warning in self.warnings]


def parse(
    text: str, *, registry: Registry | None = None, cache: TemplateCache | None = None
) -> Template:
    """The parsed (and cached) template for ``text``."""
    return (DEFAULT_CACHE if cache is None else cache).get(text, registry or default_registry())


def evaluate(
    text: str,
    context: MacroContext,
    *,
    phase: Phase = "assemble",
    limits: Limits | None = None,
    original: str | None = None,
    dynamic_macros: Mapping[str, Any] | None = None,
    post_process: Callable[[str], str] | None = None,
    replace_character_card: bool = True,
    user: str | None = None,
    char: str | None = None,
    group: str | None = None,
    access: str = "full",
    registry: Registry | None = None,
    cache: TemplateCache | None = None,
    trace: bool = False,
) -> MacroResult:
    """Evaluate ``text`` against ``context``; never raises for any input string.

    ``user``/``char``/``group`` override the context's names for this call; ``access`` is
    ``full``, ``read_only`` (user-authored platform text: write macros stay raw with
    ``macro_write_forbidden``) or ``off`` (the text is returned unchanged).
    """
    if not isinstance(text, str):
        text = str(text)
    if phase not in d.PHASES:
        return MacroResult(
            text=text,
            warnings=(
                MacroWarning(
                    code=d.MACRO_EVAL_PHASE_DISALLOWED,
                    message=f"unknown phase {phase!r}; expected one of {', '.join(d.PHASES)}",
                    position=0,
                ),
            ),
        )
    if access == "off" or not text:
        return MacroResult(text=text)
    if phase == "import":
        return MacroResult(
            text=preprocess(text),
            warnings=(
                MacroWarning(
                    code=d.MACRO_EVAL_PHASE_DISALLOWED,
                    message="macros are not evaluated in phase import",
                    position=0,
                ),
            ),
        )
    if is_plain_text(text, limits or DEFAULT_LIMITS):
        # Most chat lines hold no macro at all; parsing and a fresh environment would only
        # hand the same text back (a prompt renders a couple of hundred such lines a turn).
        return MacroResult(text=text)
    chosen = (limits or DEFAULT_LIMITS).clamped()
    registry = registry or default_registry()
    dynamic: dict[str, Any] = {}
    for source in (context.dynamic_macros, dynamic_macros or {}):
        for key, value in source.items():
            dynamic[str(key).lower()] = value
    now = context.now or datetime.now(UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    cache = DEFAULT_CACHE if cache is None else cache
    env = MacroEnv(
        context,
        registry=registry,
        phase=phase,
        limits=chosen,
        access=_access(access),
        original=original,
        dynamic=dynamic,
        post_process=post_process,
        replace_character_card=replace_character_card,
        trace=trace,
        user=context.user if user is None else user,
        char=context.char if char is None else char,
        group=context.group if group is None else group,
        now=now,
        parse=lambda source: cache.get(source, registry),
    )
    try:
        out = _run(env, cache.get(text, registry))
    except (RecursionError, MemoryError) as exc:
        env.warn(d.MACRO_INTERNAL_ERROR, f"evaluation gave up: {type(exc).__name__}", 0)
        out = text
    except Exception as exc:  # the engine never raises on input; report and keep the text
        env.warn(d.MACRO_INTERNAL_ERROR, f"evaluation failed: {type(exc).__name__}: {exc}", 0)
        out = text
    mutations = tuple(env.mutations)
    return MacroResult(
        text=out,
        warnings=tuple(env.warnings),
        mutations=mutations,
        staged_mutations=mutations if phase == "assemble" else (),
        preview_mutations=mutations if phase in ("preview", "dry_run") else (),
        traces=tuple(env.traces),
        used_names=tuple(env.used_names),
        steps=env.steps,
    )


def is_plain_text(text: str, limits: Limits = DEFAULT_LIMITS) -> bool:
    """True when evaluating ``text`` cannot change it: no macro opener, no legacy marker, no
    escape for post-processing to undo, and short enough for the output limit."""
    return (
        "{{" not in text
        and "\\" not in text
        and "\u0000" not in text
        and len(text) <= max(0, limits.max_output_chars)
        and ("<" not in text or not has_legacy_marker(text))
    )


def _access(access: str) -> Access:
    """An access mode; anything unknown is treated as the safe ``read_only``."""
    for mode in ACCESS_MODES:
        if access == mode:
            return mode
    return "read_only"


def _run(env: MacroEnv, template: Template) -> str:
    env.template = template
    for note in template.notes:
        env.warn(note.code, note.message, note.position, note.name)
    out = env.eval_items(template.items, 0, 0)
    out = postprocess(out)
    if len(out) > env.limits.max_output_chars:
        out = env.limit_text(out, 0)
    return out
