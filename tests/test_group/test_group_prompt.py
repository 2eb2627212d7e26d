"""Dry-run style assembly of a group turn: swap has only the speaker's card, join has every
member's, wrapped by the join prefix and suffix; the group chat prompt and nudge are used."""

from __future__ import annotations

from engine.prompt.assemble import AssemblyResult, assemble
from engine.prompt.inputs import AssemblyInput, CharacterFields, GroupPrompt
from engine.prompt.macro_port import EngineMacros, macro_context
from tests.test_prompt.helpers import chat, contents, preset

CARDS = preset(
    [
        {"identifier": "charDescription", "marker": True},
        {"identifier": "charPersonality", "marker": True},
        {"identifier": "scenario", "marker": True},
        {"identifier": "chatHistory", "marker": True},
    ],
    ["charDescription", "charPersonality", "scenario", "chatHistory"],
)

MIRA = CharacterFields(
    name="Mira",
    description="{{char}} is a bard.",
    personality="bold",
    depth_prompt="Mira's note",
    depth_prompt_depth=1,
)
BRAM = CharacterFields(
    name="Bram",
    description="  {{char}} keeps the bar.  ",
    scenario="A tavern.",
    depth_prompt="Bram's note",
    depth_prompt_depth=1,
)
COLE = CharacterFields(name="Cole", description="Cole sleeps.", depth_prompt="Cole's note")


def group(**kw: object) -> GroupPrompt:
    return GroupPrompt(members=(MIRA, BRAM, COLE), muted=("Cole",), **kw)  # type: ignore[arg-type]


def run(speaker: CharacterFields, g: GroupPrompt) -> AssemblyResult:
    inp = AssemblyInput(
        preset=CARDS,
        character=speaker,
        history=chat("hi", "hello", char="Mira"),
        user_name="Ann",
        group=g,
    )
    macros = EngineMacros(macro_context(speaker, user_name="Ann", group=g), phase="dry_run")
    return assemble(inp, macros=macros)


def test_swap_has_only_the_speakers_card() -> None:
    out = contents(run(MIRA, group(mode="swap")))
    assert out[0] == "Mira is a bard."
    assert not any("keeps the bar" in c for c in out)
    assert out[2] == "[Start a new group chat. Group members: Mira, Bram, Cole]"
    assert out[-1] == "[Write the next reply only as Mira.]"
    assert "Mira's note" in "\n".join(out) and "Bram's note" not in "\n".join(out)


def test_join_has_every_unmuted_members_card_wrapped() -> None:
    g = group(mode="join", join_prefix="[{{char}}'s <FIELDNAME>: ", join_suffix="]")
    out = contents(run(BRAM, g))
    assert out[0] == (
        "[Mira's Description: Mira is a bard.]\n[Bram's Description: Bram keeps the bar.]"
    )
    assert out[1] == "[Mira's Personality: bold]"
    assert out[2] == "[Bram's Scenario: A tavern.]"
    assert not any("Cole sleeps" in c for c in out)  # muted and not speaking
    joined = "\n".join(out)
    assert "Mira's note" in joined and "Bram's note" in joined and "Cole's note" not in joined
    assert out[-1] == "[Write the next reply only as Bram.]"


def test_join_keeps_a_muted_speaker_and_join_muted_keeps_all() -> None:
    speaking = contents(run(COLE, group(mode="join")))
    assert speaking[0] == "Mira is a bard.\nBram keeps the bar.\nCole sleeps."
    assert "Cole's note" in "\n".join(speaking)
    kept = contents(run(MIRA, group(mode="join", join_muted=True)))
    assert kept[0] == "Mira is a bard.\nBram keeps the bar.\nCole sleeps."
    assert "Cole's note" not in "\n".join(kept)  # depth prompts never keep muted members


def test_a_solo_turn_keeps_the_solo_prompts() -> None:
    inp = AssemblyInput(preset=CARDS, character=MIRA, history=chat("hi"), user_name="Ann")
    assert not inp.is_group
    out = contents(assemble(inp))
    assert out[0] == "{{char}} is a bard." and "[Start a new Chat]" in out
