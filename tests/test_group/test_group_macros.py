"""{{group}}, {{charIfNotGroup}}, {{groupNotMuted}} and {{notChar}} as SillyTavern's macro
engine (MacroEnvBuilder.getGroupValue) gives them."""

from __future__ import annotations

from engine.macros import evaluate
from engine.prompt.inputs import CharacterFields, GroupPrompt
from engine.prompt.macro_port import macro_context
from tests.test_macros.util import ctx, text

TEMPLATE = "{{group}}|{{charIfNotGroup}}|{{groupNotMuted}}|{{notChar}}"


def test_group_names_in_a_group() -> None:
    context = ctx(char="Bram", group_members=["Mira", "Bram", "Cole"], group_muted=["Cole"])
    assert text(TEMPLATE, context) == "Mira, Bram, Cole|Mira, Bram, Cole|Mira, Bram|Mira"


def test_not_char_leaves_out_the_speaker_and_the_muted_but_not_the_user_solo() -> None:
    speaking_muted = ctx(char="Cole", group_members=["Mira", "Bram", "Cole"], group_muted=["Cole"])
    assert text("{{notChar}}|{{groupNotMuted}}", speaking_muted) == "Mira, Bram|Mira, Bram"
    assert text(TEMPLATE, ctx(user="Ann", char="Sera")) == "Sera|Sera|Sera|Ann"


def test_an_override_string_answers_all_group_names() -> None:
    context = ctx(group="Everyone", group_members=["Mira", "Bram"])
    assert text("{{group}}|{{groupNotMuted}}|{{notChar}}", context) == (
        "Everyone|Everyone|Everyone"
    )


def test_macro_context_takes_the_group_from_the_prompt_input() -> None:
    group = GroupPrompt(
        members=(CharacterFields(name="Mira"), CharacterFields(name="Bram")), muted=("Mira",)
    )
    context = macro_context(CharacterFields(name="Bram"), user_name="Ann", group=group)
    result = evaluate(TEMPLATE, context)
    assert result.text == "Mira, Bram|Mira, Bram|Bram|"
