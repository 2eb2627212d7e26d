"""Who wrote a text decides what its macros may do (issue 12): the renderer's origin, the
persona behind ``{{persona}}``, and the page's write budget."""

from __future__ import annotations

import pytest

from engine.macros import evaluate
from engine.prompt.assemble import assemble
from engine.prompt.inputs import GAME_MASTER, PLAYER, AssemblyInput, CharacterFields, Persona
from engine.prompt.macro_port import EngineMacros, escape_macros, macro_context, player_access
from engine.variables.values import MAX_WRITES_PER_PAGE
from tests.test_prompt.helpers import chat, default_preset

PERSONA = Persona(description="{{setvar::gold::999}}{{setglobalvar::admin::1}}A knight, {{user}}.")


def _macros(mode: str = "read_only") -> EngineMacros:
    context = macro_context(CharacterFields(name="Sera"), user_name="Ann", persona=PERSONA)
    return EngineMacros(context, phase="assemble", player_access=player_access(mode))


def test_the_origin_not_the_source_name_decides() -> None:
    macros = _macros()
    # A source name that looks like a game master's text is still player text when said so.
    assert macros.render("{{setvar::x::1}}a", source="preset.main", origin=PLAYER) == (
        "{{setvar::x::1}}a"
    )
    assert not macros.mutations
    assert macros.render("{{setvar::x::1}}b", source="history.3", origin=GAME_MASTER) == "b"
    assert [m.item.key for m in macros.mutations] == ["x"]  # type: ignore[union-attr]


def test_persona_macro_in_a_preset_does_not_run_the_persona_writes() -> None:
    macros = _macros()
    out = macros.render("Persona: {{persona}}", source="preset.main", origin=GAME_MASTER)
    assert out == "Persona: {{setvar::gold::999}}{{setglobalvar::admin::1}}A knight, Ann."
    assert not macros.mutations
    assert macros.context.local == {} and macros.context.global_vars == {}
    # {{if persona}} resolves the same value without writing either.
    macros.render("{{if persona}}yes{{/if}}", source="preset.main", origin=GAME_MASTER)
    assert not macros.mutations


def test_off_shows_the_persona_raw_and_full_lets_it_write() -> None:
    off = _macros("off")
    out = off.render("{{persona}}", source="preset.main", origin=GAME_MASTER)
    assert out == PERSONA.description and not off.mutations
    full = _macros("full")
    full.render("{{persona}}", source="preset.main", origin=GAME_MASTER)
    assert {m.item.key for m in full.mutations} == {"gold", "admin"}  # type: ignore[union-attr]


def test_an_assembly_renders_the_persona_read_only() -> None:
    macros = _macros()
    inp = AssemblyInput(
        preset=default_preset(),
        character=CharacterFields(name="Sera"),
        history=chat("hi"),
        user_name="Ann",
        persona=PERSONA,
    )
    result = assemble(inp, macros=macros)
    text = "\n".join(m.content for m in result.ir.messages)
    assert "A knight, Ann." in text
    assert not macros.mutations
    refused = [w for w in macros.warnings if w.item.code == "macro_write_forbidden"]
    assert {w.source for w in refused} == {"persona"}


@pytest.mark.parametrize(
    "text", ["{{user}}", "a\\{b}", "\\\\{{x}}\\", "}{", "{{// c}}", "plain", "\\"]
)
def test_escaped_text_evaluates_back_to_itself(text: str) -> None:
    context = macro_context(CharacterFields(name="Sera"), user_name="Ann")
    assert evaluate(escape_macros(text), context).text == text


def test_unknown_macro_modes_are_read_only() -> None:
    assert player_access("everything") == "read_only"
    assert [player_access(m) for m in ("read_only", "full", "off")] == ["read_only", "full", "off"]


def test_the_page_write_budget_is_shared_by_every_text() -> None:
    macros = _macros()
    first = "{{setvar::a::1}}" * (MAX_WRITES_PER_PAGE - 2)
    macros.render(first, source="preset.main", origin=GAME_MASTER)
    macros.render("{{setvar::b::1}}" * 5, source="card.description", origin=GAME_MASTER)
    assert len(macros.mutations) == MAX_WRITES_PER_PAGE
    assert macros.context.local == {"a": "1", "b": "1"}
    messages = [w.item.message for w in macros.warnings if w.source == "card.description"]
    assert any(f"MAX_WRITES_PER_PAGE={MAX_WRITES_PER_PAGE}" in m for m in messages)
