"""The assembler's :class:`~engine.prompt.inputs.MacroRenderer` backed by the macro engine.

One :class:`EngineMacros` serves one assembly: every prompt text is evaluated on the same
:class:`~engine.macros.MacroContext` (so a ``{{setvar}}`` in the preset is visible to later
texts, as in SillyTavern), and the warnings, traces and mutations of every call are collected
with the source of the text that produced them.

What a text's macros may do follows from who wrote it (:data:`~engine.prompt.inputs.Origin`,
given with every call): a game master's assets run with full access, player text under the
session's ``macro_mode``. The page's writes share one budget, :data:`MAX_WRITES_PER_PAGE`:
past it, writes are refused with a warning and the turn still commits. Their evaluation steps
share another, :data:`~engine.macros.limits.TURN_MACRO_STEPS`: once it is spent, later texts
are kept as written, with one warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from engine.macros import (
    DEFAULT_LIMITS,
    CardFields,
    ChatMessage,
    MacroContext,
    evaluate,
    is_plain_text,
)
from engine.macros.diagnostics import (
    MACRO_MUTATION_LIMIT_EXCEEDED,
    MACRO_STEP_LIMIT_EXCEEDED,
    MacroTrace,
    MacroWarning,
    Mutation,
    Phase,
)
from engine.macros.limits import TURN_MACRO_STEPS
from engine.prompt.inputs import (
    GAME_MASTER,
    MEMBER_CARD,
    CharacterFields,
    GroupPrompt,
    HistoryLine,
    Origin,
    Persona,
)
from engine.variables.values import MAX_WRITES_PER_PAGE

# How many recent messages the macro context carries ({{lastMessage}} and friends need only
# the newest ones; the chat itself is never loaded whole).
MACRO_CHAT_TAIL = 50


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnostic:
    """A warning, trace or mutation with the source of the text it came from."""

    source: str
    item: MacroWarning | MacroTrace | Mutation

    def to_json(self) -> dict[str, Any]:
        """Plain JSON: the item's fields plus ``source``."""
        out: dict[str, Any] = {"source": self.source}
        for name in self.item.__dataclass_fields__:
            value = getattr(self.item, name)
            out[name] = value if isinstance(value, str | int | float | bool | None) else str(value)
        return out


MacroMode = Literal["read_only", "full", "off"]
"""A session's ``macro_mode``: what player text's macros may do."""
PLAYER_ACCESS_MODES: tuple[MacroMode, ...] = get_args(MacroMode)
"""Every :data:`MacroMode`."""

_BRACE = re.compile(r"[{}]")


def player_access(macro_mode: str) -> str:
    """The macro access of player text under the session's ``macro_mode``; anything unknown
    is the safe ``read_only``."""
    return macro_mode if macro_mode in PLAYER_ACCESS_MODES else "read_only"


def escape_macros(text: str) -> str:
    """``text`` with every brace escaped, so evaluating it again gives it back unchanged (the
    macro engine's post-processing removes the escapes) and runs none of its macros."""
    return _BRACE.sub(lambda m: "\\" + m.group(0), text)


class EngineMacros:
    """Renders prompt text with :func:`engine.macros.evaluate` in one phase.

    ``player_access`` is the session's ``macro_mode`` (``read_only``, ``full`` or ``off``):
    what the macros of player text may do. A game master's text always runs with full access.
    The persona description in the context (``{{persona}}``) is player text: it is rendered
    here once under ``player_access`` and kept escaped, so a preset's ``{{persona}}`` shows it
    without running its macros a second time with the preset's access.
    """

    def __init__(
        self,
        context: MacroContext,
        *,
        phase: Phase,
        trace: bool = False,
        player_access: str = "read_only",
    ) -> None:
        self.context = context
        self.phase: Phase = phase
        self.trace = trace
        self.player_access = player_access
        self.warnings: list[Diagnostic] = []
        self.traces: list[Diagnostic] = []
        self.mutations: list[Diagnostic] = []
        self.max_writes = MAX_WRITES_PER_PAGE
        self.max_steps = TURN_MACRO_STEPS
        self.steps = 0
        self._steps_spent = False
        persona = context.card.persona
        if persona and self.player_access != "full":
            quiet = evaluate(persona, context, phase=phase, access=self.player_access)
            self.steps += quiet.steps
            context.card = replace(context.card, persona=escape_macros(quiet.text))

    def access_of(self, origin: Origin) -> str:
        """The macro access of a text written by ``origin``."""
        return "full" if origin == GAME_MASTER else self.player_access

    def render(
        self,
        text: str,
        *,
        source: str,
        origin: Origin,
        env: Mapping[str, object] | None = None,
    ) -> str:
        """The text with macros expanded under ``origin``'s access; ``env`` may carry
        ``original``, ``outlets``, :data:`~engine.prompt.inputs.MEMBER_CARD` (a group
        member's card) and call-local values (such as ``lastChatMessage``)."""
        return self._evaluate(text, source=source, origin=origin, env=env, escape=None)

    def render_escaped(
        self, text: str, *, source: str, origin: Origin, escape: Callable[[str], str]
    ) -> str:
        """The text with macros expanded and ``escape`` applied to each macro's value (a regex
        script's find pattern with ``substituteRegex`` = 2 needs the values regex-escaped)."""
        return self._evaluate(text, source=source, origin=origin, env=None, escape=escape)

    def _evaluate(
        self,
        text: str,
        *,
        source: str,
        origin: Origin,
        env: Mapping[str, object] | None,
        escape: Callable[[str], str] | None,
    ) -> str:
        if not text or is_plain_text(text):
            # Nothing to expand; ``env`` only feeds macros (each evaluating call sets outlets).
            return text
        # Every text of the assembly draws on one step budget (TURN_MACRO_STEPS): each call
        # gets what is left, and once it is spent later texts are kept as written.
        steps_left = self.max_steps - self.steps
        if steps_left <= 0:
            self._turn_steps_spent(source, 0)
            return text
        env = env or {}
        outlets = env.get("outlets")
        if isinstance(outlets, Mapping):
            self.context.outlets = {str(k): str(v) for k, v in outlets.items()}
        original = env.get("original")
        # A group member's card: that member is {{char}} (and the base of {{notChar}}), and
        # card macros inside it give '' (SillyTavern's baseChatReplace with name2 set).
        member = env.get(MEMBER_CARD)
        member_name = member if isinstance(member, str) else None
        special = ("outlets", "original", MEMBER_CARD)
        dynamic = {k: v for k, v in env.items() if k not in special}
        # Every text of the page draws on one write budget: the commit refuses a page with
        # more than MAX_WRITES_PER_PAGE writes, so past it a write is refused here instead.
        left = max(0, self.max_writes - len(self.mutations))
        limits = replace(
            DEFAULT_LIMITS,
            max_mutations=min(DEFAULT_LIMITS.max_mutations, left),
            max_steps=min(DEFAULT_LIMITS.max_steps, steps_left),
        )
        result = evaluate(
            text,
            self.context,
            phase=self.phase,
            limits=limits,
            original=original if isinstance(original, str) else None,
            dynamic_macros=dynamic or None,
            post_process=escape,
            trace=self.trace,
            access=self.access_of(origin),
            char=member_name,
            replace_character_card=member_name is None,
        )
        self.steps += result.steps
        warnings = result.warnings
        if steps_left < DEFAULT_LIMITS.max_steps:  # a step limit hit here is the turn's
            cut = [w for w in warnings if w.code == MACRO_STEP_LIMIT_EXCEEDED]
            if cut:
                warnings = tuple(w for w in warnings if w.code != MACRO_STEP_LIMIT_EXCEEDED)
                self._turn_steps_spent(source, cut[0].position)
        self.warnings.extend(Diagnostic(source=source, item=w) for w in warnings)
        self.traces.extend(Diagnostic(source=source, item=t) for t in result.traces)
        self.mutations.extend(Diagnostic(source=source, item=m) for m in result.mutations)
        if left < DEFAULT_LIMITS.max_mutations and any(
            w.code == MACRO_MUTATION_LIMIT_EXCEEDED for w in result.warnings
        ):
            self.warnings.append(
                Diagnostic(
                    source=source,
                    item=MacroWarning(
                        code=MACRO_MUTATION_LIMIT_EXCEEDED,
                        message=(
                            f"this page already staged {self.max_writes} variable writes "
                            f"(MAX_WRITES_PER_PAGE={MAX_WRITES_PER_PAGE}); later writes refused"
                        ),
                        position=0,
                    ),
                )
            )
        return result.text

    def _turn_steps_spent(self, source: str, position: int) -> None:
        """Report, once, that the assembly's step budget ran out in ``source``."""
        if self._steps_spent:
            return
        self._steps_spent = True
        self.warnings.append(
            Diagnostic(
                source=source,
                item=MacroWarning(
                    code=MACRO_STEP_LIMIT_EXCEEDED,
                    message=(
                        f"this turn's macros used {self.max_steps} evaluation steps "
                        f"(TURN_MACRO_STEPS={TURN_MACRO_STEPS}); the rest of this text and "
                        "every later text are kept as written"
                    ),
                    position=position,
                ),
            )
        )


def macro_context(
    character: CharacterFields,
    *,
    user_name: str,
    persona: Persona | None = None,
    recent: Sequence[HistoryLine] = (),
    user_input: str = "",
    local: dict[str, Any] | None = None,
    global_vars: dict[str, Any] | None = None,
    seed: int | str | None = None,
    chat_id: str | None = None,
    group: GroupPrompt | None = None,
) -> MacroContext:
    """A macro context for assembling a prompt: names, card fields, persona, the newest
    messages (oldest first, at most :data:`MACRO_CHAT_TAIL`) and the variable views.
    ``group`` (a group turn, ``character`` being the speaker) gives ``{{group}}``,
    ``{{groupNotMuted}}`` and ``{{notChar}}`` the members' names."""
    tail = list(recent)[-MACRO_CHAT_TAIL:]
    return MacroContext(
        user=user_name,
        char=character.name,
        card=CardFields(
            description=character.description,
            personality=character.personality,
            scenario=character.scenario,
            persona=persona.description if persona else "",
            mes_examples=character.mes_example,
            creator_notes=character.creator_notes,
            char_prompt=character.system_prompt,
            char_instruction=character.post_history_instructions,
            char_depth_prompt=character.depth_prompt,
        ),
        chat=[ChatMessage(mes=line.text, is_user=line.is_user, name=line.name) for line in tail],
        local=local if local is not None else {},
        global_vars=global_vars if global_vars is not None else {},
        seed=seed,
        chat_id=chat_id,
        input=user_input,
        group_members=list(group.names) if group is not None else [],
        group_muted=list(group.muted) if group is not None else [],
    )
