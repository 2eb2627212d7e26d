"""Prompt order: the default preset's layout, markers, overrides and the custom-prompt quirk."""

from __future__ import annotations

from engine.formats.worldbook import POS_AFTER, POS_BEFORE
from engine.prompt.inputs import CharacterFields, Persona
from engine.prompt.wi_sources import BookSource
from tests.test_prompt.helpers import chat, contents, default_preset, ids, preset, run
from tests.test_worldinfo.helpers import book, entry

FULL_CARD = CharacterFields(
    name="Sera",
    description="DESC",
    personality="kind",
    scenario="a glade",
    mes_example="<START>\nAnn: hi\nSera: hello",
)


def test_default_preset_layout() -> None:
    b = book(
        entry(1, constant=True, position=POS_BEFORE, content="WI-BEFORE"),
        entry(2, constant=True, position=POS_AFTER, content="WI-AFTER"),
    )
    result = run(
        default_preset(),
        chat("hello", "hi there"),
        character=FULL_CARD,
        persona=Persona(description="PERSONA"),
        books=[BookSource(book=b)],
        user_input="how are you?",
    )
    assert ids(result) == [
        "main",
        "worldInfoBefore",
        "personaDescription",
        "charDescription",
        "charPersonality",
        "scenario",
        "worldInfoAfter",
        "newChat",
        "dialogueExamples",
        "dialogueExamples",
        "newMainChat",
        "chatHistory-2",
        "chatHistory-1",
        "chatHistory-0",
    ]
    msgs = result.ir.messages
    assert msgs[1].content == "WI-BEFORE" and msgs[6].content == "WI-AFTER"
    assert [m.content for m in msgs[7:10]] == ["[Example Chat]", "hi", "hello"]
    assert [m.name for m in msgs[8:10]] == ["example_user", "example_assistant"]
    assert [(m.role, m.content) for m in msgs[-3:]] == [
        ("user", "hello"),
        ("assistant", "hi there"),
        ("user", "how are you?"),
    ]
    assert [str(s) for s in msgs[1].sources] == ["world:B.1"]
    assert [str(s) for s in msgs[-1].sources] == ["history:input"]
    assert [str(s) for s in msgs[-2].sources] == ["history:2"]


def test_legacy_order_appends_missing_markers_at_the_end() -> None:
    p = default_preset()
    legacy = type(p)(
        **{
            **{f: getattr(p, f) for f in p.__dataclass_fields__},
            "prompt_orders": tuple(o for o in p.prompt_orders if o.character_id == 100000),
        }
    )
    result = run(legacy, persona=Persona(description="PERSONA"), user_input="x")
    assert ids(result)[-1] == "personaDescription" and contents(result)[-1] == "PERSONA"


def test_disabled_and_untriggered_prompts() -> None:
    p = preset(
        [
            {"identifier": "main", "content": "MAIN"},
            {"identifier": "nsfw", "content": "AUX"},
            {"identifier": "jailbreak", "content": "PHI", "injection_trigger": ["continue"]},
            {"identifier": "chatHistory", "marker": True},
        ],
        [("main", False), ("nsfw", False), "chatHistory", "jailbreak"],
    )
    assert contents(run(p, user_input="x")) == ["[Start a new Chat]", "x"]
    assert contents(run(p, user_input="x", generation_type="continue"))[-1] == "PHI"


def test_custom_prompt_quirk_system_prompt_must_be_false() -> None:
    p = preset(
        [
            {"identifier": "a", "content": "PLACED", "system_prompt": False},
            {"identifier": "b", "content": "NEVER-ABSENT"},
            {"identifier": "c", "content": "NEVER-TRUE", "system_prompt": True},
            {"identifier": "chatHistory", "marker": True},
        ],
        ["a", "b", "c", "chatHistory"],
    )
    assert contents(run(p)) == ["PLACED", "[Start a new Chat]"]


def test_card_overrides_main_and_jailbreak_with_original() -> None:
    p = preset(
        [
            {"identifier": "main", "content": "PRESET-MAIN"},
            {"identifier": "jailbreak", "content": "PRESET-PHI", "forbid_overrides": True},
            {"identifier": "chatHistory", "marker": True},
        ],
        ["main", "chatHistory", "jailbreak"],
    )

    class Originals:
        def render(self, text: str, *, source: str, origin: str, env=None) -> str:  # type: ignore[no-untyped-def]
            return text.replace("{{original}}", str((env or {}).get("original", "")))

    from engine.prompt.assemble import assemble
    from engine.prompt.inputs import AssemblyInput

    card = CharacterFields(
        name="Sera", system_prompt="CARD {{original}}", post_history_instructions="CARD-PHI"
    )
    result = assemble(
        AssemblyInput(preset=p, character=card, history=chat(), user_input="x"),
        macros=Originals(),
    )
    assert [m.content for m in result.ir.messages] == [
        "CARD PRESET-MAIN",
        "[Start a new Chat]",
        "x",
        "PRESET-PHI",
    ]
    assert [str(s) for s in result.ir.messages[0].sources] == ["card:system_prompt"]


def test_formats_for_personality_scenario_and_world_info() -> None:
    p = preset(
        [
            {"identifier": i, "marker": True}
            for i in ("charPersonality", "scenario", "worldInfoBefore")
        ],
        ["charPersonality", "scenario", "worldInfoBefore"],
        personality_format="[P: {{personality}}]",
        scenario_format="[S: {{scenario}}]",
        wi_format="<lore>{0}</lore>",
    )
    b = book(entry(1, constant=True, content="L"))
    result = run(p, character=FULL_CARD, books=[BookSource(book=b)])
    # charDescription is not in this order at all, so (as in SillyTavern) it is appended.
    assert contents(result) == ["[P: kind]", "[S: a glade]", "<lore>L</lore>", "DESC"]


def test_squash_merges_unnamed_system_messages() -> None:
    p = preset(
        [
            {"identifier": "main", "content": "A"},
            {"identifier": "nsfw", "content": "B"},
            {"identifier": "chatHistory", "marker": True},
        ],
        ["main", "nsfw", "chatHistory"],
        squash_system_messages=True,
    )
    result = run(p, user_input="x")
    assert contents(result) == ["A\nB", "[Start a new Chat]", "x"]
    assert [str(s) for s in result.ir.messages[0].sources] == ["preset:main", "preset:nsfw"]
