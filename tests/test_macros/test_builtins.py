"""Built-in macro families: names, card fields, chat, state, time, instruct and app macros."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engine.macros import CardFields, ChatMessage
from engine.macros.timefmt import format_moment, humanize
from tests.test_macros.util import ctx, text


def test_names_and_group() -> None:
    assert (
        text("{{group}}|{{charIfNotGroup}}|{{groupNotMuted}}|{{notChar}}") == "Bob|Bob|Bob|Alice"
    )
    assert text("{{group}}|{{notChar}}", ctx(group="Bob, Carol")) == "Bob, Carol|Bob, Carol"
    assert text("{{userName}}/{{assistantName}}") == "Alice/Bob"


def test_card_fields() -> None:
    card = CardFields(
        description="{{char}} is tall.",
        personality="kind",
        scenario="A tavern.",
        persona="{{user}} is curious.",
        char_version="1.2",
        creator_notes="note",
        first_message="Hello {{user}}",
        alternate_greetings=["Alt one", "Alt two"],
        mes_examples="<START>\n{{user}}: hi\n{{char}}: hello",
        char_prompt="Be {{char}}.",
        char_instruction="Stay in character.",
        char_depth_prompt="depth",
    )
    context = ctx(card=card)
    assert (
        text(
            "{{description}}|{{personality}}|{{scenario}}|{{persona}}|{{version}}|{{creatorNotes}}",
            context,
        )
        == "Bob is tall.|kind|A tavern.|Alice is curious.|1.2|note"
    )
    assert text(
        "{{greeting}}|{{greeting::1}}|{{charFirstMessage::2}}|[{{greeting::9}}]", context
    ) == ("Hello Alice|Alt one|Alt two|[]")
    assert text("{{mesExamples}}", context) == "<START>\nAlice: hi\nBob: hello\n"
    assert text("{{charPrompt}}|{{charInstruction}}|{{charDepthPrompt}}", context) == (
        "Be Bob.|Stay in character.|depth"
    )
    assert text("{{systemPrompt}}", context) == "Be Bob."
    context.settings["prefer_character_prompt"] = False
    assert text("[{{charPrompt}}]", context) == "[]"
    assert (
        text("{{scenario}}", ctx(card=card, chat_metadata={"scenario": "Override"})) == "Override"
    )


def test_chat_macros() -> None:
    chat = [
        ChatMessage(mes="u1", is_user=True),
        ChatMessage(mes="sys", is_system=True),
        ChatMessage(mes="c1", swipes=["c1", "c1b"], swipe_id=0),
    ]
    out = text(
        "{{lastMessage}}|{{lastUserMessage}}|{{lastCharMessage}}|{{lastMessageId}}|"
        "{{currentSwipeId}}/{{lastSwipeId}}|{{allChatRange}}",
        ctx(chat=chat),
    )
    assert out == "c1|u1|c1|2|1/2|0-2"
    swiping = chat[:2] + [ChatMessage(mes="new", swipes=["a"], swipe_id=1)]
    assert text("{{lastMessage}}|{{lastMessageId}}", ctx(chat=swiping)) == "sys|1"
    assert text("[{{lastMessage}}][{{allChatRange}}]") == "[][]"


def test_state_macros() -> None:
    context = ctx(model="gpt-x", extensions={"foo": True}, last_generation_type="swipe")
    out = text(
        "{{maxPrompt}}/{{maxContext}}/{{maxResponse}}|{{model}}|{{isMobile}}|"
        "{{lastGenerationType}}|{{hasExtension::foo}}{{hasExtension::bar}}",
        context,
    )
    assert out == "7680/8192/512|gpt-x|false|swipe|truefalse"
    context.settings.update(max_context=4096, max_response=300)
    assert text("{{maxPromptTokens}}", context) == "3796"
    assert (
        text("[{{input}}] {{outlet::lore}}", ctx(input="typed", outlets={"lore": "L"}))
        == "[typed] L"
    )


def test_banned_words_accumulate_on_the_context() -> None:
    context = ctx()
    assert text('[{{banned "delve"}}]{{banned::tapestry}}', context) == "[]"
    assert context.banned_words == ["delve", "tapestry"]


def test_instruct_and_prompt_macros() -> None:
    assert text("[{{instructInput}}][{{chatStart}}][{{exampleSeparator}}]") == "[][***][***]"
    on = ctx(settings={"instruct": {"enabled": True, "last_input_sequence": "LAST"}})
    assert text(
        "{{instructInput}}|{{instructOutput}}|{{instructFirstInput}}|{{instructLastInput}}", on
    ) == ("### Instruction:|### Response:|### Instruction:|LAST")
    notes = ctx(chat_metadata={"note_prompt": "AN"}, default_authors_note="dAN", summary="S")
    assert text("{{authorsNote}}|{{defaultAuthorsNote}}|{{summary}}", notes) == "AN|dAN|S"
    assert text("{{reasoningPrefix}}x{{reasoningSuffix}}") == "<think>x</think>"
    assert (
        text("[{{defaultSystemPrompt}}]", ctx(settings={"sysprompt": {"enabled": False}})) == "[]"
    )


def test_time_macros_on_a_frozen_clock() -> None:
    assert text("{{time}}|{{date}}|{{weekday}}|{{isotime}}|{{isodate}}") == (
        "12:00 PM|January 1, 2025|Wednesday|12:00|2025-01-01"
    )
    assert text(
        "{{datetimeformat::YYYY-MM-DD HH:mm:ss}} {{datetimeformat::Do [of] MMM, ddd}}"
    ) == ("2025-01-01 12:00:00 1st of Jan, Wed")
    assert text("{{time}} {{isodate}}", ctx(tz="Asia/Tokyo")) == "9:00 PM 2025-01-01"


def test_time_difference_and_idle_duration() -> None:
    assert text("{{timeDiff::2023-01-01 12:00:00::2023-01-01 15:00:00}}") == "3 hours ago"
    assert text("{{timeDiff::2023-01-03::2023-01-01}}") == "in 2 days"
    assert text("{{timeDiff::nonsense::2023-01-01}}") == "Invalid date"
    chat = [
        ChatMessage(mes="hi", is_user=True, send_date="2024-12-31T12:00:00Z"),
        ChatMessage(mes="yo", send_date="2024-12-31T12:01:00Z"),
    ]
    assert text("{{idleDuration}}|{{idle_duration}}", ctx(chat=chat)) == "a day|a day"
    assert text("{{idleDuration}}") == "just now"


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (10, "a few seconds"),
        (44, "a few seconds"),
        (45, "a minute"),
        (89, "a minute"),
        (90, "2 minutes"),
        (44 * 60, "44 minutes"),
        (45 * 60, "an hour"),
        (21 * 3600, "21 hours"),
        (22 * 3600, "a day"),
        (25 * 86400, "25 days"),
        (26 * 86400, "a month"),
        (100 * 86400, "3 months"),
        (320 * 86400, "a year"),
        (800 * 86400, "2 years"),
    ],
)
def test_humanize_thresholds(seconds: int, expected: str) -> None:
    assert humanize(seconds * 1000) == expected


def test_moment_format_tokens() -> None:
    moment = datetime(2024, 3, 9, 7, 5, 3, 45000, tzinfo=UTC)
    assert format_moment(moment, "LLLL") == "Saturday, March 9, 2024 7:05 AM"
    assert format_moment(moment, "YY M/D h:m:s a SSS Z [YYYY] Q") == (
        "24 3/9 7:5:3 am 045 +00:00 YYYY 1"
    )
