"""compat_strict / compat_plus planning: SillyTavern's Chat Completion layout from a preset.

The preset's prompt order gives the slots; markers are filled from the card, persona and world
info; the card's system prompt and post-history instructions override ``main`` and
``jailbreak``; in-chat prompts are set aside for the history. SillyTavern's quirks are kept:
a custom prompt is placed only when its ``system_prompt`` is explicitly ``false``, and markers
missing from the order are appended at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.formats.preset import BUILTIN_IDS, PresetPrompt
from engine.prompt.inchat import InChatPrompt, section
from engine.prompt.inputs import (
    GAME_MASTER,
    NOTE_BEFORE_PROMPT,
    NOTE_IN_PROMPT,
    PERSONA_IN_PROMPT,
)
from engine.prompt.ir import IRMessage, Section
from engine.prompt.plan import Plan, Slot, SlotKind
from engine.prompt.prepare import Prepared, Rendered


@dataclass(slots=True)
class _Item:
    prompt: PresetPrompt
    included: bool
    content: str
    sections: tuple[Section, ...]


def format_world_info(text: str, wi_format: str) -> str:
    """``wi_format`` with ``{0}`` replaced by the text ('' stays '')."""
    if not text:
        return ""
    if not wi_format.strip():
        return text
    return wi_format.replace("{0}", text)


def marker_values(prep: Prepared) -> dict[str, Rendered]:
    """The contents of the marker prompts."""
    preset = prep.inp.preset
    f = prep.fields
    wi = prep.world_info

    def formatted(fmt: str, token: str, value: Rendered, source: str) -> Rendered:
        if not value.text:
            return Rendered()
        # The value is already rendered: render only the format around it, never it twice.
        pieces = [
            prep.render(piece, f"preset.{source}", origin=GAME_MASTER)
            for piece in fmt.split(token)
        ]
        return Rendered(text=value.text.join(pieces), sections=value.sections)

    persona = f["persona"]
    in_prompt = prep.inp.persona.placement == PERSONA_IN_PROMPT
    return {
        "worldInfoBefore": Rendered(
            text=format_world_info(wi.before_text, preset.wi_format),
            sections=tuple(section("world", e.key, e.content) for e in wi.before),
        ),
        "worldInfoAfter": Rendered(
            text=format_world_info(wi.after_text, preset.wi_format),
            sections=tuple(section("world", e.key, e.content) for e in wi.after),
        ),
        "charDescription": f["description"],
        "charPersonality": formatted(
            preset.personality_format, "{{personality}}", f["personality"], "personality_format"
        ),
        "scenario": formatted(preset.scenario_format, "{{scenario}}", f["scenario"], "scenario"),
        "personaDescription": persona if in_prompt and persona.text else Rendered(),
    }


def _collection(prep: Prepared) -> tuple[list[_Item], set[str]]:
    inp = prep.inp
    preset = inp.preset
    order = preset.effective_order()
    items: list[_Item] = []
    for slot in order:
        prompt = preset.prompt(slot.identifier)
        if prompt is None:
            continue
        included = slot.enabled and prompt.triggered_by(inp.generation_type)
        if not included and slot.identifier != "main":
            continue  # a disabled main keeps its place (extension prompts anchor to it)
        text = (
            prep.render(prompt.content, f"preset.{prompt.identifier}", origin=GAME_MASTER)
            if included
            else ""
        )
        items.append(
            _Item(
                prompt=prompt,
                included=included,
                content=text,
                sections=(section("preset", prompt.identifier, text),),
            )
        )
    return items, {slot.identifier for slot in order}


def _find(items: list[_Item], identifier: str) -> _Item | None:
    return next((i for i in items if i.prompt.identifier == identifier), None)


def _override(prep: Prepared, items: list[_Item], ident: str, field: str) -> None:
    raw = prep.fields[field].text
    item = _find(items, ident)
    if not raw or item is None or not item.included or item.prompt.forbid_overrides:
        return
    text = prep.render(raw, f"card.{field}", {"original": item.content}, origin=GAME_MASTER)
    item.content = text
    item.sections = (section("card", field, text),)


def plan_compat(prep: Prepared) -> Plan:
    """The slots of SillyTavern's Chat Completion prompt for this preset."""
    inp = prep.inp
    items, listed = _collection(prep)
    for ident, value in marker_values(prep).items():
        item = _find(items, ident)
        if item is not None:
            item.content, item.sections = value.text, value.sections
        elif ident not in listed:
            marker = PresetPrompt(identifier=ident, marker=True, system_prompt=True)
            items.append(
                _Item(prompt=marker, included=True, content=value.text, sections=value.sections)
            )
    _override(prep, items, "main", "system_prompt")
    _override(prep, items, "jailbreak", "post_history_instructions")
    plan = Plan()
    for item in items:
        p = item.prompt
        ident = p.identifier
        if ident in ("chatHistory", "dialogueExamples"):
            kind: SlotKind = "history" if ident == "chatHistory" else "examples"
            plan.slots.append(Slot(identifier=ident, kind=kind))
            continue
        if p.in_chat:
            if item.included and item.content:
                plan.in_chat.append(
                    InChatPrompt(
                        identifier=ident,
                        depth=p.injection_depth,
                        order=p.injection_order,
                        role=p.role,
                        content=item.content,
                        sections=item.sections,
                    )
                )
            continue
        if ident not in BUILTIN_IDS and p.system_prompt is not False:
            continue  # SillyTavern's quirk: such custom prompts are never placed
        messages = (
            [
                IRMessage(
                    role=p.role, content=item.content, sections=item.sections, identifier=ident
                )
            ]
            if item.content
            else []
        )
        plan.slots.append(Slot(identifier=ident, messages=messages))
    anchor_note(prep, plan)
    if inp.mode == "compat_plus":
        add_memory(prep, plan)
    add_controls(prep, plan)
    return plan


def anchor_note(prep: Prepared, plan: Plan) -> None:
    """Place an in-prompt Author's Note around ``main`` (or beside it in the chat)."""
    note = prep.inp.author_note
    if not prep.note_inserted or note is None:
        return
    if note.position not in (NOTE_IN_PROMPT, NOTE_BEFORE_PROMPT):
        return
    at_start = note.position == NOTE_BEFORE_PROMPT
    message = IRMessage(
        role="system",
        content=prep.note.text,
        sections=prep.note.sections,
        identifier="authorsNote",
    )
    index = plan.index_of("main")
    if index is not None:
        slot = plan.slots[index]
        slot.messages.insert(0 if at_start else len(slot.messages), message)
        return
    for pos, prompt in enumerate(plan.in_chat):
        if prompt.identifier == "main":
            moved = InChatPrompt(
                identifier="authorsNote",
                depth=prompt.depth,
                order=prompt.order,
                role=prompt.role,
                content=prep.note.text,
                sections=prep.note.sections,
            )
            plan.in_chat.insert(pos if at_start else pos + 1, moved)
            return
    prep.warnings.append("author's note anchored to 'main', which is not in the prompt order")


def memory_slots(prep: Prepared) -> list[Slot]:
    """The memory block and other instances' inputs, each as its own slot."""
    inp = prep.inp
    slots: list[Slot] = []
    text = "\n".join(item.text for item in inp.memory if item.text)
    if text:
        sections = tuple(section("memory", item.id, item.text) for item in inp.memory)
        message = IRMessage(role="system", content=text, sections=sections, identifier="memory")
        slots.append(Slot(identifier="memory", messages=[message]))
    for contribution in inp.instances:
        if contribution.text:
            message = IRMessage(
                role="system",
                content=contribution.text,
                sections=(section("instance", contribution.slot, contribution.text),),
                identifier=f"instance.{contribution.slot}",
            )
            slots.append(Slot(identifier=message.identifier, messages=[message]))
    return slots


def add_memory(prep: Prepared, plan: Plan, anchor: str | None = None) -> None:
    """Insert :func:`memory_slots` after the slot ``anchor`` if given and present, else at
    the session's ``memory_position`` (before the chat history by default)."""
    slots = memory_slots(prep)
    if not slots:
        return
    index = plan.index_of(anchor) if anchor else None
    if index is not None:
        where = index + 1
    else:
        ident, after = {
            "before_chat": ("chatHistory", 0),
            "after_worldinfo": ("worldInfoAfter", 1),
            "before_jailbreak": ("jailbreak", 0),
        }[prep.inp.memory_position]
        found = plan.index_of(ident)
        where = len(plan.slots) if found is None else found + after
    plan.slots[where:where] = slots


def add_controls(prep: Prepared, plan: Plan) -> None:
    """Prompts that always go last (impersonation)."""
    inp = prep.inp
    if inp.generation_type == "impersonate" and inp.preset.impersonation_prompt:
        text = prep.render(
            inp.preset.impersonation_prompt, "preset.impersonation_prompt", origin=GAME_MASTER
        )
        plan.controls.append(
            IRMessage(
                role="system",
                content=text,
                sections=(section("utility", "impersonation_prompt", text),),
                identifier="impersonate",
            )
        )
