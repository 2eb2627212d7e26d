"""One prompt assembly shares one macro step budget, ``TURN_MACRO_STEPS`` (issue 12): a preset,
card or world book cannot multiply the per-call limit by spreading its macros over many texts.
"""

from __future__ import annotations

from engine.macros.limits import DEFAULT_MAX_STEPS, TURN_MACRO_STEPS
from engine.prompt.assemble import assemble
from engine.prompt.inputs import GAME_MASTER, PLAYER, AssemblyInput, CharacterFields
from engine.prompt.macro_port import EngineMacros, macro_context
from tests.test_prompt.helpers import chat, preset

STEP_CODE = "macro_step_limit_exceeded"


def _macros() -> EngineMacros:
    return EngineMacros(
        macro_context(CharacterFields(name="Sera"), user_name="Ann"), phase="assemble"
    )


def _turn_warnings(macros: EngineMacros) -> list[str]:
    """Where each step-limit warning came from (each must name the turn's limit)."""
    found = [d for d in macros.warnings if d.item.code == STEP_CODE]  # type: ignore[union-attr]
    assert all("TURN_MACRO_STEPS" in d.item.message for d in found)  # type: ignore[union-attr]
    return [d.source for d in found]


def test_the_turn_budget_is_a_total_over_every_text_of_the_assembly() -> None:
    assert DEFAULT_MAX_STEPS < TURN_MACRO_STEPS  # a single text never meets it alone
    per_text = TURN_MACRO_STEPS // 4
    big = "{{user}}" * per_text
    macros = _macros()
    for n in range(3):  # three quarters of the budget: all evaluated
        assert macros.render(big, source=f"preset.p{n}", origin=GAME_MASTER) == "Ann" * per_text
    assert _turn_warnings(macros) == []
    # The fourth text meets the total part way: the rest of it stays as written.
    fourth = macros.render(big, source="world.book.7", origin=GAME_MASTER)
    assert fourth.startswith("Ann") and fourth.endswith("{{user}}")
    assert 0 < fourth.count("{{user}}") < per_text
    # Every later text is left unevaluated; the warning was given once, where it ran out.
    assert macros.render("{{char}} waves", source="preset.last", origin=GAME_MASTER) == (
        "{{char}} waves"
    )
    assert macros.render("{{setvar::x::1}}", source="history.2", origin=PLAYER) == (
        "{{setvar::x::1}}"
    )
    assert _turn_warnings(macros) == ["world.book.7"]
    # (Charges for long produced text land after the last step check: a small overshoot.)
    assert TURN_MACRO_STEPS <= macros.steps <= TURN_MACRO_STEPS + 2_000
    assert not macros.mutations


def test_an_assembly_past_its_budget_keeps_later_prompts_as_written() -> None:
    p = preset(
        [
            {"identifier": "main", "content": "{{setvar::a::1}}" + "{{char}}" * 40},
            {"identifier": "nsfw", "content": "{{user}} and {{getvar::a}}"},
            {"identifier": "chatHistory", "marker": True},
        ],
        ["main", "nsfw", "chatHistory"],
    )
    card = CharacterFields(name="Sera")
    macros = EngineMacros(macro_context(card, user_name="Ann"), phase="assemble")
    macros.max_steps = 30  # the same mechanism as TURN_MACRO_STEPS, at a size a test can see
    result = assemble(
        AssemblyInput(preset=p, character=card, history=chat("hi"), user_name="Ann"),
        macros=macros,
    )
    texts = [m.content for m in result.ir.messages]
    assert texts[0].startswith("Sera" * 10) and texts[0].endswith("{{char}}")
    assert texts[1] == "{{user}} and {{getvar::a}}"
    assert len(_turn_warnings(macros)) == 1
    assert [m.item.key for m in macros.mutations] == ["a"]  # type: ignore[union-attr]
