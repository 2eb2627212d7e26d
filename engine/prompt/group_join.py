"""Join mode of a group turn: every member's card in one prompt, as SillyTavern builds it.

SillyTavern's ``getGroupCharacterCardsLazy`` and ``getGroupDepthPrompts``: for each member in
list order, each of description, personality, scenario and examples becomes
``prefix + value + suffix`` (the value trimmed; empty values are left out), where the join
prefix and suffix and the value have ``<FIELDNAME>`` replaced by the field's display name and
their macros expanded with ``{{char}}`` being that member; the pieces are joined with a
newline. Examples without a leading ``<START>`` get one. A muted member is left out unless it
is the speaker or the group keeps muted members (``join_muted``). Each member's depth prompt
(muted ones only when speaking) becomes its own in-chat prompt ``DEPTH_PROMPT_<i>``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from engine.macros.examples import format_examples
from engine.prompt.inchat import ExtensionPrompt, section
from engine.prompt.inputs import MEMBER_CARD, AssemblyInput, CharacterFields, GroupPrompt
from engine.prompt.ir import Section

if TYPE_CHECKING:
    from engine.macros.evaluator import MacroEnv

JOIN_FIELDS: tuple[tuple[str, str], ...] = (
    ("description", "Description"),
    ("personality", "Personality"),
    ("scenario", "Scenario"),
    ("mes_example", "Example Messages"),
)
"""The card fields join mode combines, with the name ``<FIELDNAME>`` stands for."""

JOINED_MACROS: Final[Mapping[str, str]] = {
    "description": "description",
    "charDescription": "description",
    "personality": "personality",
    "charPersonality": "personality",
    "scenario": "scenario",
    "charScenario": "scenario",
    "mesExamplesRaw": "mes_example",
}
"""The card macros that give a joined field in join mode (SillyTavern's card fields come from
``getGroupCharacterCardsLazy`` then), with the field each gives; ``{{mesExamples}}`` is the
joined examples formatted."""

_FIELDNAME = re.compile(r"<FIELDNAME>", re.IGNORECASE)
_START = "<START>"

Render = Callable[[str, str, Mapping[str, object] | None], str]
"""``render(text, source, env)``: macro expansion of a game master's text; ``env`` names the
member whose card it is (:data:`~engine.prompt.inputs.MEMBER_CARD`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinedField:
    """One combined field with the members' pieces it was made from."""

    text: str
    sections: tuple[Section, ...]


def is_join(inp: AssemblyInput) -> bool:
    """Whether this assembly joins the members' cards."""
    return inp.group is not None and inp.group.mode == "join"


def _members(inp: AssemblyInput, group: GroupPrompt, *, keep_muted: bool) -> list[CharacterFields]:
    speaker = inp.character.name
    out: list[CharacterFields] = []
    for member in group.members:
        if member.name == speaker:
            out.append(inp.character)  # the caller's chat overrides apply to the speaker
        elif keep_muted or member.name not in group.muted:
            out.append(member)
    return out


def joined_fields(inp: AssemblyInput, render: Render) -> dict[str, JoinedField]:
    """The four combined fields (for a join-mode group; empty otherwise)."""
    group = inp.group
    if group is None or group.mode != "join":
        return {}
    members = _members(inp, group, keep_muted=group.join_muted)

    def wrap(template: str, label: str, name: str, source: str) -> str:
        if not template:
            return ""
        return render(_FIELDNAME.sub(label, template), source, {MEMBER_CARD: name})

    out: dict[str, JoinedField] = {}
    for key, label in JOIN_FIELDS:
        override = group.scenario_override if key == "scenario" else ""
        if key == "mes_example":
            override = group.examples_override
        if override.strip():
            text = render(override.strip(), f"chat.{key}", None).replace("\r", "")
            out[key] = JoinedField(text=text, sections=(section("card", key, text),))
            continue
        pieces: list[str] = []
        sections: list[Section] = []
        for member in members:
            value = str(getattr(member, key)).strip()
            if not value:
                continue
            if key == "mes_example" and not value.startswith(_START):
                value = f"{_START}\n{value}"
            ref = f"{member.name}.{key}"
            prefix = wrap(group.join_prefix, label, member.name, "group.join_prefix")
            suffix = wrap(group.join_suffix, label, member.name, "group.join_suffix")
            body = wrap(value, label, member.name, f"card.{ref}")
            piece = f"{prefix}{body}{suffix}".replace("\r", "")
            if piece:
                pieces.append(piece)
                sections.append(section("card", ref, piece))
        out[key] = JoinedField(text="\n".join(pieces), sections=tuple(sections))
    return out


def member_depth_prompts(inp: AssemblyInput, render: Render) -> list[ExtensionPrompt]:
    """Each member's depth prompt as ``DEPTH_PROMPT_<i>`` (join mode only)."""
    group = inp.group
    if group is None or group.mode != "join":
        return []
    out: list[ExtensionPrompt] = []
    for member in _members(inp, group, keep_muted=False):
        raw = member.depth_prompt.strip()
        if not raw:
            continue
        ref = f"{member.name}.depth_prompt"
        text = render(raw, f"card.{ref}", {MEMBER_CARD: member.name}).replace("\r", "")
        if not text:
            continue
        out.append(
            ExtensionPrompt(
                key=f"DEPTH_PROMPT_{len(out)}",
                depth=member.depth_prompt_depth,
                role=member.depth_prompt_role,
                content=text,
                sections=(section("card", ref, text),),
            )
        )
    return out


def joined_card_macros(joined: Mapping[str, JoinedField]) -> dict[str, object]:
    """Call-local macros for a join-mode turn: ``{{description}}``, ``{{personality}}``,
    ``{{scenario}}``, ``{{mesExamplesRaw}}`` (and their ``char...`` names) give the joined
    fields, ``{{mesExamples}}`` the joined examples formatted, as SillyTavern's card fields
    are the joined ones in join mode. Inside a card (card macros off) they give ``''``, as
    any card macro there does. Empty when nothing was joined."""
    if not joined:
        return {}

    def field(text: str) -> Callable[[MacroEnv], str]:
        return lambda env: text if env.replace_character_card else ""

    macros: dict[str, object] = {
        name: field(joined[key].text) for name, key in JOINED_MACROS.items() if key in joined
    }
    examples = joined.get("mes_example")
    if examples is not None:
        text = examples.text
        macros["mesExamples"] = lambda env: (
            format_examples(text, env) if env.replace_character_card else ""
        )
    return macros
