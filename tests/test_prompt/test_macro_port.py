"""The macro-engine renderer: one shared context, original/outlets/call-local values, and
diagnostics with their sources."""

from __future__ import annotations

from engine.formats.worldbook import POS_OUTLET
from engine.prompt.assemble import assemble
from engine.prompt.inputs import GAME_MASTER, PLAYER, AssemblyInput, CharacterFields
from engine.prompt.macro_port import MACRO_CHAT_TAIL, EngineMacros, macro_context
from engine.prompt.wi_sources import BookSource
from tests.test_prompt.helpers import chat, preset
from tests.test_worldinfo.helpers import book, entry


def test_assembly_with_the_macro_engine() -> None:
    p = preset(
        [
            {"identifier": "main", "content": "{{setvar::mood::calm}}{{char}} meets {{user}}."},
            {"identifier": "nsfw", "content": "Mood: {{getvar::mood}}. Bag: {{outlet::bag}}"},
            {"identifier": "chatHistory", "marker": True},
        ],
        ["main", "nsfw", "chatHistory"],
    )
    card = CharacterFields(name="Sera", system_prompt="Card says: {{original}}")
    b = book(entry(1, constant=True, position=POS_OUTLET, outlet_name="bag", content="a rope"))
    macros = EngineMacros(macro_context(card, user_name="Ann"), phase="assemble", trace=True)
    result = assemble(
        AssemblyInput(
            preset=p,
            character=card,
            history=chat("hi"),
            user_name="Ann",
            books=[BookSource(book=b)],
        ),
        macros=macros,
    )
    texts = [m.content for m in result.ir.messages]
    assert texts[0] == "Card says: Sera meets Ann."
    assert texts[1] == "Mood: calm. Bag: a rope"
    assert [m.item.key for m in macros.mutations] == ["mood"]  # type: ignore[union-attr]
    assert {t.source for t in macros.traces} >= {"card.system_prompt", "preset.nsfw"}


def test_context_keeps_only_the_newest_messages() -> None:
    lines = list(chat(*[f"m{i}" for i in range(MACRO_CHAT_TAIL + 10)]).newest_first())[::-1]
    context = macro_context(CharacterFields(name="Sera"), user_name="Ann", recent=lines)
    assert len(context.chat) == MACRO_CHAT_TAIL and context.chat[-1].mes == lines[-1].text


def test_dry_run_phase_reports_preview_writes() -> None:
    macros = EngineMacros(
        macro_context(CharacterFields(name="Sera"), user_name="Ann"), phase="dry_run"
    )
    assert macros.render("{{setvar::x::1}}ok", source="t", origin=GAME_MASTER) == "ok"
    assert [w.item.code for w in macros.warnings] == ["macro_preview_side_effect_suppressed"]
    assert macros.warnings[0].to_json()["source"] == "t"


def test_chat_messages_are_read_only_by_default() -> None:
    context = macro_context(CharacterFields(name="Sera"), user_name="Ann")
    macros = EngineMacros(context, phase="assemble")
    out = macros.render("{{setvar::x::1}}{{char}}", source="history.input", origin=PLAYER)
    assert out == "{{setvar::x::1}}Sera" and not macros.mutations
    assert "macro_write_forbidden" in [w.item.code for w in macros.warnings]  # type: ignore[union-attr]
    full = EngineMacros(context, phase="assemble", player_access="full")
    assert full.render("{{setvar::x::1}}ok", source="history.3", origin=PLAYER) == "ok"
    assert full.mutations
    off = EngineMacros(context, phase="assemble", player_access="off")
    assert off.render("{{char}}", source="history.3", origin=PLAYER) == "{{char}}"
