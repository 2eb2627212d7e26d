"""The first half of assembly, shared by every mode: render the card and persona, decide the
Author's Note, scan world info, and gather the extension prompts and example blocks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.prompt.budget import REPLY_PRIMING_TOKENS, TokenCounter
from engine.prompt.examples import parse_mes_examples
from engine.prompt.group_join import joined_card_macros, joined_fields, member_depth_prompts
from engine.prompt.history import CursorWindow, HistoryCursor
from engine.prompt.inchat import ExtensionPrompt, section
from engine.prompt.inputs import (
    GAME_MASTER,
    NOTE_IN_CHAT,
    PERSONA_AT_DEPTH,
    PERSONA_BOTTOM_AN,
    PERSONA_TOP_AN,
    PLACEMENT_WORLD_INFO,
    PLAYER,
    ROLE_BY_NUMBER,
    AssemblyInput,
    AuthorNote,
    HistoryLine,
    MacroRenderer,
    Origin,
    PromptRegex,
)
from engine.prompt.ir import Role, Section
from engine.prompt.regex_budget import RegexBudget
from engine.prompt.wi_output import ActivatedEntry, WorldInfoResult
from engine.prompt.wi_sources import ScanSources
from engine.prompt.worldinfo import WorldInfoRequest, scan_world_info


@dataclass(slots=True, kw_only=True)
class Rendered:
    """Text with the sections it was made from."""

    text: str = ""
    sections: tuple[Section, ...] = ()


@dataclass(slots=True, kw_only=True)
class Prepared:
    """Everything the planners and the fill step read."""

    inp: AssemblyInput
    macros: MacroRenderer
    counter: TokenCounter
    cursor: HistoryCursor
    max_context: int
    response_tokens: int
    available: int
    fields: dict[str, Rendered]
    world_info: WorldInfoResult
    note: Rendered
    note_inserted: bool
    note_settings: AuthorNote
    extensions: list[ExtensionPrompt]
    example_blocks: list[Rendered]
    warnings: list[str] = field(default_factory=list)
    env: dict[str, object] = field(default_factory=dict)

    def render(
        self,
        text: str,
        source: str,
        env: Mapping[str, object] | None = None,
        *,
        origin: Origin,
    ) -> str:
        """Expand macros under ``origin``'s access (empty text skips the renderer)."""
        if not text:
            return ""
        merged = {**self.env, **env} if env else self.env
        return self.macros.render(text, source=source, origin=origin, env=merged)

    def render_card(self, text: str, source: str, env: Mapping[str, object] | None) -> str:
        """Expand macros in a game master's card text (a group member's, with ``env``
        naming that member: :data:`~engine.prompt.inputs.MEMBER_CARD`)."""
        return self.render(text, source, env, origin=GAME_MASTER)


def note_due(interval: int, user_messages: int) -> bool:
    """Whether the Author's Note goes in this turn (SillyTavern's interval rule)."""
    if interval == 1:
        return True
    if user_messages <= 0 or interval <= 0:
        return False
    gap = user_messages % interval if user_messages >= interval else interval - user_messages
    return gap == 0


def _wi_sections(entries: tuple[ActivatedEntry, ...]) -> tuple[Section, ...]:
    return tuple(section("world", e.key, e.content) for e in entries)


def prepare(
    inp: AssemblyInput,
    macros: MacroRenderer,
    regex: PromptRegex,
    counter: TokenCounter,
    *,
    regex_budget: RegexBudget | None = None,
) -> Prepared:
    """Run the mode-independent steps (world info regex keys draw on ``regex_budget``)."""
    preset = inp.preset
    max_context = inp.max_context or preset.openai_max_context
    response = preset.openai_max_tokens if inp.max_tokens is None else inp.max_tokens
    user_line = (
        HistoryLine(text=inp.user_input, is_user=True, name=inp.user_name)
        if inp.user_input is not None
        else None
    )
    cursor = HistoryCursor(inp.history, user_input=user_line, regex=regex)
    prep = Prepared(
        inp=inp,
        macros=macros,
        counter=counter,
        cursor=cursor,
        max_context=max_context,
        response_tokens=response,
        available=max_context - response - REPLY_PRIMING_TOKENS,
        fields={},
        world_info=WorldInfoResult(),
        note=Rendered(),
        note_inserted=False,
        # A chat without a note has SillyTavern's default one (no text, every turn).
        note_settings=inp.author_note or AuthorNote(),
        extensions=[],
        example_blocks=[],
    )
    char = inp.character
    raw_fields = {
        "description": char.description,
        "personality": char.personality,
        "scenario": char.scenario,
        "mes_example": char.mes_example,
        "system_prompt": char.system_prompt,
        "post_history_instructions": char.post_history_instructions,
        "creator_notes": char.creator_notes,
        "depth_prompt": char.depth_prompt,
    }
    for name, value in raw_fields.items():
        # The two override fields are rendered by the planner, with {{original}} bound.
        late = name in ("system_prompt", "post_history_instructions")
        if not late:
            value = prep.render(value, f"card.{name}", origin=GAME_MASTER)
        text = value.replace("\r", "")
        prep.fields[name] = Rendered(text=text, sections=(section("card", name, text),))
    # A join-mode group puts every member's card in place of the speaker's own, in the
    # prompt and in the card macros of every later text.
    joined = joined_fields(inp, prep.render_card)
    for name, combined in joined.items():
        prep.fields[name] = Rendered(text=combined.text, sections=combined.sections)
    prep.env.update(joined_card_macros(joined))
    # A persona is typed by its player (Discord /persona set, Telegram's persona command).
    persona_text = prep.render(inp.persona.description, "persona", origin=PLAYER)
    prep.fields["persona"] = Rendered(
        text=persona_text, sections=(section("persona", inp.user_name, persona_text),)
    )
    note = prep.note_settings
    users = inp.history.user_messages + (1 if inp.user_input is not None else 0)
    # Only a game master sets the Author's Note (or imports a chat that carries one).
    note_text = prep.render(note.text, "author_note", origin=GAME_MASTER)
    # SillyTavern decides by the interval alone: a note due this turn is inserted even with
    # no text, and the world info placed before/after it goes where it goes.
    prep.note_inserted = note_due(note.interval, users)
    _scan(prep, regex, note_text, regex_budget)
    _author_note(prep, note_text)
    _extensions(prep)
    _examples(prep)
    return prep


def _scan(
    prep: Prepared, regex: PromptRegex, note_text: str, regex_budget: RegexBudget | None
) -> None:
    inp = prep.inp
    f = prep.fields
    injections: list[str] = []
    if prep.note_inserted and prep.note_settings.allow_wi_scan:
        if note_text:
            injections.append(note_text)
        if f["depth_prompt"].text:
            injections.append(f["depth_prompt"].text)
    if inp.persona.placement == PERSONA_AT_DEPTH and f["persona"].text:
        injections.append(f["persona"].text)
    window = CursorWindow(prep.cursor, include_names=inp.world_info.include_names)
    request = WorldInfoRequest(
        books=inp.books,
        window=window,
        settings=inp.world_info,
        max_context=prep.max_context - prep.response_tokens,
        generation_type=inp.generation_type,
        character_name=inp.character.name,
        character_avatar=inp.character.avatar,
        character_tags=inp.character.tags,
        sources=ScanSources(
            persona_description=f["persona"].text,
            character_description=f["description"].text,
            character_personality=f["personality"].text,
            character_depth_prompt=f["depth_prompt"].text,
            scenario=f["scenario"].text,
            creator_notes=f["creator_notes"].text,
            injections=tuple(injections),
        ),
        timed_state=inp.timed_state,
        seed=inp.seed,
        dry_run=inp.dry_run,
    )
    prep.world_info = scan_world_info(
        request,
        render=lambda text, source: prep.render(text, source, origin=GAME_MASTER),
        count_tokens=prep.counter.count,
        regex=lambda text, depth: regex(text, placement=PLACEMENT_WORLD_INFO, depth=depth),
        regex_budget=regex_budget,
    )
    prep.env["outlets"] = prep.world_info.outlet_texts()


def _author_note(prep: Prepared, note_text: str) -> None:
    if not prep.note_inserted:
        return
    wi = prep.world_info
    top = "\n".join(e.content for e in wi.an_top)
    bottom = "\n".join(e.content for e in wi.an_bottom)
    text = note_text
    if wi.an_top or wi.an_bottom:
        text = f"{top}\n{text}\n{bottom}"
        text = text.removeprefix("\n").removesuffix("\n")
    own = (section("author_note", "", note_text),) if note_text else ()
    sections = [*_wi_sections(wi.an_top), *own]
    sections.extend(_wi_sections(wi.an_bottom))
    persona = prep.fields["persona"]
    position = prep.inp.persona.placement
    if persona.text and position == PERSONA_TOP_AN:
        text = f"{persona.text}\n{text}"
        sections[:0] = persona.sections
    elif persona.text and position == PERSONA_BOTTOM_AN:
        text = f"{text}\n{persona.text}"
        sections.extend(persona.sections)
    prep.note = Rendered(text=text, sections=tuple(sections))


def _extensions(prep: Prepared) -> None:
    inp = prep.inp
    f = prep.fields
    out = prep.extensions
    members = member_depth_prompts(inp, prep.render_card)
    if members:
        out.extend(members)  # join mode: each member's depth prompt, the speaker's among them
    elif f["depth_prompt"].text:
        out.append(
            ExtensionPrompt(
                key="DEPTH_PROMPT",
                depth=inp.character.depth_prompt_depth,
                role=inp.character.depth_prompt_role,
                content=f["depth_prompt"].text,
                sections=(section("card", "depth_prompt", f["depth_prompt"].text),),
            )
        )
    note = prep.note_settings
    if prep.note_inserted and note.position == NOTE_IN_CHAT:
        out.append(
            ExtensionPrompt(
                key="2_floating_prompt",
                depth=note.depth,
                role=_role(note.role),
                content=prep.note.text,
                sections=prep.note.sections,
            )
        )
    if inp.persona.placement == PERSONA_AT_DEPTH and f["persona"].text:
        out.append(
            ExtensionPrompt(
                key="PERSONA_DESCRIPTION",
                depth=inp.persona.depth,
                role=_role(inp.persona.role),
                content=f["persona"].text,
                sections=f["persona"].sections,
            )
        )
    for group in prep.world_info.depth:
        out.append(
            ExtensionPrompt(
                key=f"customDepthWI_{group.depth}_{group.role}",
                depth=group.depth,
                role=_role(group.role),
                content=group.content,
                sections=_wi_sections(group.entries),
            )
        )


def _examples(prep: Prepared) -> None:
    blocks = [
        Rendered(text=b, sections=(section("example", str(i), b),))
        for i, b in enumerate(parse_mes_examples(prep.fields["mes_example"].text))
    ]
    wi = prep.world_info
    for entry in wi.em_top:
        for b in reversed(parse_mes_examples(entry.content)):
            blocks.insert(0, Rendered(text=b, sections=(section("world", entry.key, b),)))
    for entry in wi.em_bottom:
        for b in parse_mes_examples(entry.content):
            blocks.append(Rendered(text=b, sections=(section("world", entry.key, b),)))
    prep.example_blocks = blocks


def _role(number: int) -> Role:
    return ROLE_BY_NUMBER[number] if 0 <= number < len(ROLE_BY_NUMBER) else "system"
