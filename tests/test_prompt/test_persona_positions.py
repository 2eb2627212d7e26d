"""Persona description positions, including SillyTavern's deprecated AFTER_CHAR."""

from __future__ import annotations

from engine.prompt.inputs import (
    PERSONA_AFTER_CHAR,
    PERSONA_AT_DEPTH,
    PERSONA_BOTTOM_AN,
    PERSONA_IN_PROMPT,
    PERSONA_NONE,
    PERSONA_TOP_AN,
    AuthorNote,
    Persona,
)
from tests.test_prompt.helpers import chat, contents, default_preset, ids, preset, run


def test_position_numbers_match_sillytavern() -> None:
    assert (
        PERSONA_IN_PROMPT,
        PERSONA_AFTER_CHAR,
        PERSONA_TOP_AN,
        PERSONA_BOTTOM_AN,
        PERSONA_AT_DEPTH,
        PERSONA_NONE,
    ) == (0, 1, 2, 3, 4, 9)


def test_after_char_is_read_as_in_prompt() -> None:
    assert Persona(position=PERSONA_AFTER_CHAR).placement == PERSONA_IN_PROMPT
    assert Persona(position=PERSONA_TOP_AN).placement == PERSONA_TOP_AN
    in_prompt = run(default_preset(), chat("hi"), persona=Persona(description="ME", position=0))
    after_char = run(default_preset(), chat("hi"), persona=Persona(description="ME", position=1))
    assert contents(after_char) == contents(in_prompt)
    assert ids(after_char)[:2] == ["main", "personaDescription"]
    assert contents(after_char)[ids(after_char).index("personaDescription")] == "ME"
    none = run(default_preset(), chat("hi"), persona=Persona(description="ME", position=9))
    assert "personaDescription" not in ids(none) and "ME" not in contents(none)


def test_after_char_never_goes_into_the_note_or_the_chat() -> None:
    p = preset([{"identifier": "chatHistory", "marker": True}], ["chatHistory"])
    result = run(
        p,
        chat("m0"),
        author_note=AuthorNote(text="AN", depth=0),
        persona=Persona(description="ME", position=PERSONA_AFTER_CHAR, depth=0),
    )
    # No personaDescription marker in this order: the persona is appended as IN_PROMPT would
    # be; the note and the chat stay as they are.
    assert contents(result)[:3] == ["[Start a new Chat]", "m0", "AN"]
    assert contents(result)[-1] == "ME" and ids(result)[-1] == "personaDescription"
