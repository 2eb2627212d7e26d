"""The assembler's :class:`~engine.prompt.inputs.MacroRenderer` backed by the macro engine.

One :class:`EngineMacros` serves one assembly: every prompt text is evaluated on the same
:class:`~engine.macros.MacroContext` (so a ``{{setvar}}`` in the preset is visible to later
texts, as in SillyTavern), and the warnings, traces and mutations of every call are collected
with the source of the text that produced them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.macros import CardFields, ChatMessage, MacroContext, evaluate, is_plain_text
from engine.macros.diagnostics import MacroTrace, MacroWarning, Mutation, Phase
from engine.prompt.inputs import CharacterFields, HistoryLine, Persona

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


class EngineMacros:
    """Renders prompt text with :func:`engine.macros.evaluate` in one phase."""

    def __init__(
        self,
        context: MacroContext,
        *,
        phase: Phase,
        trace: bool = False,
        history_access: str = "read_only",
    ) -> None:
        self.context = context
        self.phase: Phase = phase
        self.trace = trace
        # Chat messages are text people (or the model) typed: by default their write macros
        # stay raw (DESIGN §4); the session may choose "full" or "off".
        self.history_access = history_access
        self.warnings: list[Diagnostic] = []
        self.traces: list[Diagnostic] = []
        self.mutations: list[Diagnostic] = []

    def render(self, text: str, *, source: str, env: Mapping[str, object] | None = None) -> str:
        """The text with macros expanded; ``env`` may carry ``original``, ``outlets`` and
        call-local values (such as ``lastChatMessage``)."""
        return self._evaluate(text, source=source, env=env, escape=None)

    def render_escaped(self, text: str, *, source: str, escape: Callable[[str], str]) -> str:
        """The text with macros expanded and ``escape`` applied to each macro's value (a regex
        script's find pattern with ``substituteRegex`` = 2 needs the values regex-escaped)."""
        return self._evaluate(text, source=source, env=None, escape=escape)

    def _evaluate(
        self,
        text: str,
        *,
        source: str,
        env: Mapping[str, object] | None,
        escape: Callable[[str], str] | None,
    ) -> str:
        if not text or is_plain_text(text):
            # Nothing to expand; ``env`` only feeds macros (each evaluating call sets outlets).
            return text
        env = env or {}
        outlets = env.get("outlets")
        if isinstance(outlets, Mapping):
            self.context.outlets = {str(k): str(v) for k, v in outlets.items()}
        original = env.get("original")
        dynamic = {k: v for k, v in env.items() if k not in ("outlets", "original")}
        result = evaluate(
            text,
            self.context,
            phase=self.phase,
            original=original if isinstance(original, str) else None,
            dynamic_macros=dynamic or None,
            post_process=escape,
            trace=self.trace,
            access=self.history_access if source.startswith("history.") else "full",
        )
        self.warnings.extend(Diagnostic(source=source, item=w) for w in result.warnings)
        self.traces.extend(Diagnostic(source=source, item=t) for t in result.traces)
        self.mutations.extend(Diagnostic(source=source, item=m) for m in result.mutations)
        return result.text


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
) -> MacroContext:
    """A macro context for assembling a prompt: names, card fields, persona, the newest
    messages (oldest first, at most :data:`MACRO_CHAT_TAIL`) and the variable views."""
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
    )
