"""The session's Author's Note: the /note parser, validation, storage across restarts, and
where the real service puts the note in the prompts it assembles (dry runs and model calls)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.storage import SqlStorage
from engine.errors import ConfigurationError
from engine.prompt.inputs import NOTE_BEFORE_PROMPT, NOTE_IN_CHAT, NOTE_IN_PROMPT, AuthorNote
from engine.turns.api import MAIN_BRANCH
from engine.turns.notes import (
    MAX_NOTE_CHARS,
    MAX_NOTE_DEPTH,
    SUMMARY_CHARS,
    describe_note,
    note_from_json,
    note_to_json,
    parse_note_command,
    summarize_note,
)
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_turns.conftest import KEY, Recorder, line, offline_service

pytestmark = pytest.mark.timeout(60)

NOTE = "Keep replies under three sentences."
PRESET = {"prompts": [{"identifier": "main", "name": "Main", "content": "Play {{char}}."}]}


def _note_messages(report: Any) -> list[tuple[int, dict[str, Any]]]:
    return [
        (i, m)
        for i, m in enumerate(report["messages"])
        if any(s["kind"] == "author_note" for s in m["sources"])
    ]


async def _three_floors(service: TavernService) -> None:
    await service.import_asset(KEY, "preset", "p.json", json.dumps(PRESET).encode())
    for text in ("one", "two", "three"):
        await service.respond(KEY, MAIN_BRANCH, [line(text)])


# ---------------------------------------------------------------------- the /note parser


def test_parse_shows_clears_and_sets() -> None:
    assert parse_note_command("", None).action == "show"
    assert parse_note_command("  off ", None).action == "clear"
    made = parse_note_command(f"depth=2 role=user interval=3 {NOTE}", None)
    assert made.action == "set"
    assert made.note == AuthorNote(text=NOTE, depth=2, role=1, interval=3, position=NOTE_IN_CHAT)


def test_parse_keeps_what_is_not_given() -> None:
    current = AuthorNote(text=NOTE, depth=2, role=2, interval=3, position=NOTE_IN_CHAT)
    moved = parse_note_command("position=before_prompt", current).note
    assert moved == AuthorNote(text=NOTE, depth=2, role=2, interval=3, position=NOTE_BEFORE_PROMPT)
    retexted = parse_note_command("Mind the storm.", current).note
    assert retexted == AuthorNote(text="Mind the storm.", depth=2, role=2, interval=3)
    # The text is kept as typed, quotes and all; -- ends the options.
    quoted = parse_note_command("depth=0 -- x=1 isn't a rule", None).note
    assert quoted == AuthorNote(text="x=1 isn't a rule", depth=0)


REFUSED = [
    ("deph=2 hello", "unknown /note option 'deph'; options: depth, interval"),
    ("depth=two hello", "author_note.depth must be a whole number, not 'two'"),
    (f"depth={MAX_NOTE_DEPTH + 1} hi", f"depth must be a whole number from 0 to {MAX_NOTE_DEPTH}"),
    ("interval=-1 hi", "author_note.interval must be a whole number from 0 to"),
    ("position=sideways hi", "author_note.position must be one of in_chat, in_prompt, before"),
    ("role=narrator hi", "author_note.role must be one of system, user, assistant"),
    ("--", "usage: /note"),
    ("x" * (MAX_NOTE_CHARS + 1), f"MAX_NOTE_CHARS={MAX_NOTE_CHARS}"),
]


@pytest.mark.parametrize(("args", "message"), REFUSED)
def test_parse_refuses_bad_values_clearly(args: str, message: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        parse_note_command(args, None)
    assert message in str(caught.value)


def test_stored_form_uses_names_and_reads_back() -> None:
    note = AuthorNote(text=NOTE, depth=0, role=2, interval=0, position=NOTE_IN_PROMPT)
    data = note_to_json(note)
    assert data == {
        "text": NOTE,
        "interval": 0,
        "position": "in_prompt",
        "depth": 0,
        "role": "assistant",
    }
    assert note_from_json(data) == note
    with pytest.raises(ConfigurationError, match="author_note has unknown fields colour"):
        note_from_json({**data, "colour": "red"})
    assert "in the chat at depth 4 as system, every turn" in describe_note(AuthorNote(text="x"))
    assert describe_note(None) == "No Author's Note."


def test_summary_is_one_bounded_line() -> None:
    assert summarize_note(None) == "No Author's Note."
    short = AuthorNote(text="Be brief.\nStay in character.", depth=2)
    assert summarize_note(short) == (
        "Author's Note (in the chat at depth 2 as system, every turn): "
        "Be brief. Stay in character."
    )
    long = summarize_note(AuthorNote(text="word " * 500))
    assert len(long) <= SUMMARY_CHARS and long.endswith(" wo…") and "\n" not in long
    assert summarize_note(short, max_chars=20) == "Author's Note (in t…"


# ---------------------------------------------------------------------- the real service


async def test_in_chat_note_sits_at_its_depth_with_its_role(service: TavernService) -> None:
    await _three_floors(service)
    await service.set_author_note(KEY, AuthorNote(text=NOTE, depth=2, role=1))
    report = await service.dry_run(KEY, MAIN_BRANCH, "next")
    messages = report["messages"]
    ((index, note),) = _note_messages(report)
    assert (note["role"], note["content"]) == ("user", NOTE)
    # Two chat messages after it: the last reply and the new message.
    assert index == len(messages) - 3
    assert messages[-1]["content"] == "next"
    assert messages[index - 1]["content"] == "three"

    await service.set_author_note(KEY, AuthorNote(text=NOTE, depth=0, role=2))
    report = await service.dry_run(KEY, MAIN_BRANCH, "next")
    ((index, note),) = _note_messages(report)
    assert (index, note["role"]) == (len(report["messages"]) - 1, "assistant")


@pytest.mark.parametrize("position", [NOTE_IN_PROMPT, NOTE_BEFORE_PROMPT])
async def test_prompt_positions_go_around_the_main_prompt(
    service: TavernService, position: int
) -> None:
    await _three_floors(service)
    await service.set_author_note(KEY, AuthorNote(text=NOTE, position=position, depth=1))
    report = await service.dry_run(KEY, MAIN_BRANCH, "next")
    main = next(i for i, m in enumerate(report["messages"]) if m.get("identifier") == "main")
    ((index, note),) = _note_messages(report)
    assert note["content"] == NOTE and note["role"] == "system"
    assert index == (main + 1 if position == NOTE_IN_PROMPT else main - 1)


async def test_interval_counts_user_messages(service: TavernService) -> None:
    await service.set_author_note(KEY, AuthorNote(text=NOTE, interval=2))
    # The first message is the first user message: not due until the second.
    assert _note_messages(await service.dry_run(KEY, MAIN_BRANCH, "first")) == []
    await service.respond(KEY, MAIN_BRANCH, [line("first")])
    assert len(_note_messages(await service.dry_run(KEY, MAIN_BRANCH, "second"))) == 1
    await service.respond(KEY, MAIN_BRANCH, [line("second")])
    assert _note_messages(await service.dry_run(KEY, MAIN_BRANCH, "third")) == []
    await service.set_author_note(KEY, AuthorNote(text=NOTE, interval=0))
    await service.respond(KEY, MAIN_BRANCH, [line("third")])
    assert _note_messages(await service.dry_run(KEY, MAIN_BRANCH, "fourth")) == []


async def test_authors_note_macro_expands(service: TavernService) -> None:
    assert await service.preview(KEY, MAIN_BRANCH, "[{{authorsNote}}]") == "[]"
    preset = {
        "prompts": [{"identifier": "main", "name": "Main", "content": "AN: {{authorsNote}}"}]
    }
    await service.import_asset(KEY, "preset", "p.json", json.dumps(preset).encode())
    await service.set_author_note(KEY, AuthorNote(text=NOTE, interval=0))
    assert await service.preview(KEY, MAIN_BRANCH, "[{{authorsNote}}]") == f"[{NOTE}]"
    report = await service.dry_run(KEY, MAIN_BRANCH, "hello")
    assert report["messages"][0]["content"] == f"AN: {NOTE}"


async def test_bad_values_are_refused_and_nothing_changes(service: TavernService) -> None:
    kept = AuthorNote(text=NOTE, depth=3)
    await service.set_author_note(KEY, kept)
    for bad, field in [
        (AuthorNote(text=NOTE, depth=MAX_NOTE_DEPTH + 1), "author_note.depth"),
        (AuthorNote(text=NOTE, interval=-1), "author_note.interval"),
        (AuthorNote(text=NOTE, role=7), "author_note.role"),
        (AuthorNote(text=NOTE, position=5), "author_note.position"),
        (AuthorNote(text="x" * (MAX_NOTE_CHARS + 1)), "author_note.text"),
    ]:
        with pytest.raises(ConfigurationError, match=field):
            await service.set_author_note(KEY, bad)
    with pytest.raises(ConfigurationError, match="author_note.position must be one of"):
        await service.configure(KEY, author_note={"text": "x", "position": "sideways"})
    assert await service.author_note(KEY) == kept


async def test_the_note_survives_a_restart_and_clears(
    storage: SqlStorage, events: Recorder, service: TavernService
) -> None:
    note = AuthorNote(text=NOTE, depth=1, role=2, interval=4, position=NOTE_IN_CHAT)
    await service.set_author_note(KEY, note)
    await service.set_session_option(KEY, "prompt_mode", "compat_plus")
    again = offline_service(storage, events)
    await again.start()
    assert await again.author_note(KEY) == note
    info = await again.session_info(KEY)
    assert (info.prompt_mode, info.author_note) == ("compat_plus", note)
    cleared = await again.set_author_note(KEY, None)
    assert cleared.author_note is None
    assert await offline_service(storage, events).author_note(KEY) is None
    assert (await offline_service(storage, events).session_info(KEY)).author_note is None


async def test_every_kind_of_turn_sends_the_note_to_the_model(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    fake.responder = lambda body: FakeReply(text="ok")  # type: ignore[assignment]
    await remote.set_author_note(KEY, AuthorNote(text=NOTE, depth=0, role=1))
    await remote.respond(KEY, MAIN_BRANCH, [line("hello")])
    await remote.regenerate(KEY, MAIN_BRANCH)
    await remote.continue_reply(KEY, MAIN_BRANCH)
    assert len(fake.chat_requests) == 3
    for request in fake.chat_requests:
        notes = [m for m in request.messages if m["content"] == NOTE]
        assert [m["role"] for m in notes] == ["user"]
    # Depth 0 is after the newest message (a continue adds its own nudge after that).
    for request in fake.chat_requests[:2]:
        assert request.messages[-1]["content"] == NOTE
