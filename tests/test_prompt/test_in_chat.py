"""In-chat injections: depth, order and role, extension prompts, depth beyond the chat."""

from __future__ import annotations

from engine.formats.worldbook import POS_AT_DEPTH
from engine.prompt.inputs import AuthorNote, CharacterFields, Persona
from engine.prompt.wi_sources import BookSource
from tests.test_prompt.helpers import chat, contents, preset, run
from tests.test_worldinfo.helpers import book, entry


def _inchat(ident: str, role: str, order: int, depth: int = 1) -> dict[str, object]:
    return {
        "identifier": ident,
        "content": ident,
        "role": role,
        "injection_position": 1,
        "injection_depth": depth,
        "injection_order": order,
    }


INJECTING = preset(
    [
        _inchat("S50", "system", 50),
        _inchat("U100", "user", 100),
        _inchat("S100", "system", 100),
        _inchat("A100", "assistant", 100),
        _inchat("S200", "system", 200),
        {"identifier": "chatHistory", "marker": True},
    ],
    ["S50", "U100", "S100", "A100", "S200", "chatHistory"],
)


def test_worked_example_order_and_roles() -> None:
    result = run(INJECTING, chat("m0", "m1", "m2"))
    assert contents(result) == [
        "[Start a new Chat]",
        "m0",
        "m1",
        "S50",
        "A100",
        "U100",
        "S100",
        "S200",
        "m2",
    ]
    roles = [m.role for m in result.ir.messages][3:8]
    assert roles == ["system", "assistant", "user", "system", "system"]
    assert result.ir.budget.injection_messages == 5 and result.ir.budget.history_messages == 3


def test_extension_prompts_join_the_order_100_message() -> None:
    b = book(entry(1, constant=True, position=POS_AT_DEPTH, depth=1, role=0, content="WI1"))
    result = run(
        INJECTING,
        chat("m0", "m1", "m2"),
        author_note=AuthorNote(text="AN", depth=1, role=0),
        books=[BookSource(book=b)],
    )
    text = contents(result)
    assert "S100\nAN\nWI1" in text
    sources = {
        str(s) for m in result.ir.messages for s in m.sources if m.content == "S100\nAN\nWI1"
    }
    assert sources == {"preset:S100", "author_note", "world:B.1"}


def test_depth_zero_goes_after_the_last_message() -> None:
    p = preset(
        [_inchat("Z", "system", 100, depth=0), {"identifier": "chatHistory", "marker": True}],
        ["Z", "chatHistory"],
    )
    assert contents(run(p, chat("m0", "m1")))[-2:] == ["m1", "Z"]


def test_depth_beyond_the_chat_goes_before_the_oldest_message() -> None:
    p = preset(
        [
            _inchat("D9", "system", 100, depth=9),
            _inchat("D5", "system", 100, depth=5),
            {"identifier": "chatHistory", "marker": True},
        ],
        ["D9", "D5", "chatHistory"],
    )
    assert contents(run(p, chat("m0", "m1"))) == ["[Start a new Chat]", "D9", "D5", "m0", "m1"]


def test_character_depth_prompt_and_persona_at_depth() -> None:
    p = preset([{"identifier": "chatHistory", "marker": True}], ["chatHistory"])
    card = CharacterFields(name="Sera", depth_prompt="CHAR-NOTE", depth_prompt_depth=1)
    result = run(
        p,
        chat("m0", "m1", "m2"),
        character=card,
        persona=Persona(description="PERSONA", position=4, depth=1, role=0),
    )
    assert contents(result) == ["[Start a new Chat]", "m0", "m1", "CHAR-NOTE\nPERSONA", "m2"]


def test_author_note_interval_and_positions() -> None:
    p = preset(
        [{"identifier": "main", "content": "MAIN"}, {"identifier": "chatHistory", "marker": True}],
        ["main", "chatHistory"],
    )
    history = chat("u1", "a1", "u2", "a2")  # two user messages
    every_third = run(p, history, author_note=AuthorNote(text="AN", interval=3, depth=0))
    assert "AN" not in contents(every_third)
    every_second = run(p, history, author_note=AuthorNote(text="AN", interval=2, depth=0))
    assert contents(every_second)[-1] == "AN"
    before = run(p, history, author_note=AuthorNote(text="AN", position=2))
    after = run(p, history, author_note=AuthorNote(text="AN", position=0))
    assert contents(before)[:2] == ["AN", "MAIN"] and contents(after)[:2] == ["MAIN", "AN"]


def test_world_info_wraps_the_author_note_and_persona_positions() -> None:
    b = book(
        entry(1, constant=True, position=2, content="TOP"),
        entry(2, constant=True, position=3, content="BOTTOM"),
    )
    p = preset([{"identifier": "chatHistory", "marker": True}], ["chatHistory"])
    result = run(
        p,
        chat("m0"),
        books=[BookSource(book=b)],
        author_note=AuthorNote(text="AN", depth=0),
        persona=Persona(description="ME", position=2),
    )
    assert contents(result)[-1] == "ME\nTOP\nAN\nBOTTOM"


def test_in_chat_marker_and_main() -> None:
    p = preset(
        [
            {
                "identifier": "main",
                "content": "MAIN",
                "injection_position": 1,
                "injection_depth": 0,
            },
            {
                "identifier": "charDescription",
                "marker": True,
                "injection_position": 1,
                "injection_depth": 1,
                "role": "user",
            },
            {"identifier": "chatHistory", "marker": True},
        ],
        ["main", "charDescription", "chatHistory"],
    )
    result = run(p, chat("m0", "m1"), character=CharacterFields(name="Sera", description="DESC"))
    assert contents(result) == ["[Start a new Chat]", "m0", "DESC", "m1", "MAIN"]
    assert result.ir.messages[2].role == "user"
