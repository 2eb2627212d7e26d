"""Join mode and group examples as SillyTavern gives them.

- In join mode the card macros (``{{description}}``, ``{{charPersonality}}``,
  ``{{mesExamplesRaw}}``...) of any other text give the joined fields
  (``getCharacterCardFieldsLazy`` takes them from ``getGroupCharacterCardsLazy``).
- A member's card is rendered with that member as ``name2`` (``baseChatReplace``): its
  ``{{char}}`` and ``{{notChar}}`` are relative to the member, ``{{group}}`` is the whole
  group, and card macros inside it give ``''``.
- Example dialogues in a group (``parseExampleIntoIndividual``): a line starting with any
  member's name is a characters' turn spoken by that member; each turn starts with its
  speaker's name.
"""

from __future__ import annotations

from engine.prompt.assemble import AssemblyResult, assemble
from engine.prompt.examples import EXAMPLE_ASSISTANT, EXAMPLE_USER, split_example_block
from engine.prompt.inputs import AssemblyInput, CharacterFields, GroupPrompt
from engine.prompt.macro_port import EngineMacros, macro_context
from tests.test_prompt.helpers import chat, contents, preset

PROBE = (
    "D={{description}}|CD={{charDescription}}|P={{personality}}|S={{scenario}}"
    "|CS={{charScenario}}|E={{mesExamplesRaw}}|DP={{charDepthPrompt}}"
)

CARDS = preset(
    [
        {"identifier": "main", "content": PROBE},
        {"identifier": "charDescription", "marker": True},
        {"identifier": "chatHistory", "marker": True},
    ],
    ["main", "charDescription", "chatHistory"],
)

MIRA = CharacterFields(
    name="Mira",
    description="{{char}} is a bard.",
    personality="bold",
    scenario="A fair.",
    mes_example="Mira: la la",
    depth_prompt="Mira's note",
)
BRAM = CharacterFields(
    name="Bram",
    description="{{char}} keeps the bar; not {{notChar}}; all {{group}}.",
    scenario="A tavern.",
    depth_prompt="Bram's note",
)
COLE = CharacterFields(name="Cole", description="Cole sleeps.")


def group(**kw: object) -> GroupPrompt:
    return GroupPrompt(members=(MIRA, BRAM, COLE), muted=("Cole",), **kw)  # type: ignore[arg-type]


def run(speaker: CharacterFields, g: GroupPrompt, p: object = CARDS) -> AssemblyResult:
    inp = AssemblyInput(
        preset=p,  # type: ignore[arg-type]
        character=speaker,
        history=chat("hi", "hello", char="Mira"),
        user_name="Ann",
        group=g,
    )
    macros = EngineMacros(macro_context(speaker, user_name="Ann", group=g), phase="dry_run")
    return assemble(inp, macros=macros)


def test_card_macros_give_the_joined_fields_in_join_mode() -> None:
    out = contents(run(MIRA, group(mode="join", join_prefix="[", join_suffix="]")))
    joined_description = "[Mira is a bard.]\n[Bram keeps the bar; not Mira; all Mira, Bram, Cole.]"
    assert out[0] == (
        f"D={joined_description}|CD={joined_description}|P=[bold]"
        "|S=[A fair.]\n[A tavern.]|CS=[A fair.]\n[A tavern.]"
        "|E=[<START>\nMira: la la]|DP=Mira's note"  # the depth prompt stays the speaker's
    )
    assert out[1] == joined_description  # the same text as the card slot


def test_card_macros_give_the_speakers_fields_in_swap_mode() -> None:
    out = contents(run(BRAM, group(mode="swap")))
    assert out[0] == (
        "D=Bram keeps the bar; not Mira; all Mira, Bram, Cole.|"
        "CD=Bram keeps the bar; not Mira; all Mira, Bram, Cole.|P=|S=A tavern.|CS=A tavern.|E="
        "|DP=Bram's note"
    )


def test_a_members_card_is_worked_out_relative_to_that_member() -> None:
    # Mira speaks; in Bram's card {{char}} is Bram and {{notChar}} the unmuted others (Mira),
    # not "everyone but the speaker" (Bram); {{group}} is the whole group either way.
    out = contents(run(MIRA, group(mode="join")))
    assert out[1] == "Mira is a bard.\nBram keeps the bar; not Mira; all Mira, Bram, Cole."
    cole_speaks = contents(run(COLE, group(mode="join", join_prefix="<{{notChar}}>")))
    # Cole is muted (not in anyone's notChar) but speaks, so its card is in.
    assert cole_speaks[1] == (
        "<Bram>Mira is a bard.\n<Mira>Bram keeps the bar; not Mira; all Mira, Bram, Cole."
        "\n<Mira, Bram>Cole sleeps."
    )


def test_card_macros_inside_a_members_card_give_nothing() -> None:
    nested = CharacterFields(
        name="Bram", description="[{{personality}}] {{char}}", personality="x"
    )
    g = GroupPrompt(members=(MIRA, nested), mode="join")
    out = contents(run(MIRA, g))
    assert out[1] == "Mira is a bard.\n[] Bram"


def test_mes_examples_macro_formats_the_joined_examples() -> None:
    p = preset(
        [{"identifier": "main", "content": "{{mesExamples}}"}],
        ["main"],
    )
    speaker = CharacterFields(name="Mira", mes_example="<START>\nMira: one")
    other = CharacterFields(name="Bram", mes_example="Bram: two")
    out = contents(run(speaker, GroupPrompt(members=(speaker, other), mode="join"), p))
    assert out[0] == "<START>\nMira: one\n<START>\nBram: two\n"


def test_group_examples_split_on_every_members_name() -> None:
    block = "<START>\nAnn: hello all\nBram: evening\nAnn: and you?\nMira: hi\n"
    turns = split_example_block(
        block, user_name="Ann", char_name="Mira", is_group=True, members=("Mira", "Bram")
    )
    assert [(t.name, t.content) for t in turns] == [
        (EXAMPLE_USER, "Ann: hello all"),
        (EXAMPLE_ASSISTANT, "Bram: evening"),
        (EXAMPLE_USER, "Ann: and you?"),
        # SillyTavern keeps the last member named (Bram) when the speaker's own line comes:
        # its prefix is not removed and the turn is labelled Bram.
        (EXAMPLE_ASSISTANT, "Bram: Mira: hi"),
    ]


def test_consecutive_member_lines_are_one_turn_and_solo_is_unchanged() -> None:
    block = "<START>\nMira: one\nBram: two\nAnn: three\n"
    grouped = split_example_block(
        block, user_name="Ann", char_name="Mira", is_group=True, members=("Mira", "Bram")
    )
    # One turn; named by the last member named (Bram), whose prefix is the one removed.
    assert [(t.name, t.content) for t in grouped] == [
        (EXAMPLE_ASSISTANT, "Bram: Mira: one\n two"),
        (EXAMPLE_USER, "Ann: three"),
    ]
    solo = split_example_block(block, user_name="Ann", char_name="Mira")
    # Solo, a "Bram:" line is only text of Mira's turn and nothing is prefixed.
    assert [(t.name, t.content) for t in solo] == [
        (EXAMPLE_ASSISTANT, "one\nBram: two"),
        (EXAMPLE_USER, "three"),
    ]


def test_group_examples_in_the_assembled_prompt() -> None:
    p = preset(
        [{"identifier": "dialogueExamples", "marker": True}],
        ["dialogueExamples"],
    )
    speaker = CharacterFields(name="Mira", mes_example="<START>\nAnn: hey\nBram: yo\n")
    g = GroupPrompt(members=(speaker, CharacterFields(name="Bram")), mode="swap")
    messages = run(speaker, g, p).ir.messages
    turns = [(m.name, m.content) for m in messages if m.identifier == "dialogueExamples"]
    assert turns == [(EXAMPLE_USER, "Ann: hey"), (EXAMPLE_ASSISTANT, "Bram: yo")]
