"""``/note depth=2`` with no note says there is none to change and stores nothing (issue 16:
it created an empty note)."""

from __future__ import annotations

import io
import json

import pytest

from adapters.console.frontend import ConsoleFrontend
from engine.errors import ConfigurationError
from engine.prompt.inputs import AuthorNote
from engine.turns.api import SessionKey
from engine.turns.notes import NO_NOTE_TO_CHANGE, parse_note_command
from engine.turns.service import TavernService

pytestmark = pytest.mark.timeout(60)
KEY = SessionKey(platform="console", realm="local", key="no-note")


def test_the_shared_parser_refuses_options_without_a_note() -> None:
    for args in ("depth=2", "interval=3 role=user", "depth=2 --"):
        with pytest.raises(ConfigurationError, match=NO_NOTE_TO_CHANGE):
            parse_note_command(args, None)
    made = parse_note_command("depth=2 Keep it short.", None)
    assert made.note == AuthorNote(text="Keep it short.", depth=2)
    changed = parse_note_command("depth=2", AuthorNote(text="x"))
    assert changed.note == AuthorNote(text="x", depth=2)


async def test_the_console_stores_nothing(offline_engine: TavernService) -> None:
    service = offline_engine
    await service.open_session(KEY)
    out = io.StringIO()
    console = ConsoleFrontend(service=service, key=KEY, user="Ann", out=out, jsonl=True)
    assert await console.handle_line("/note depth=2")
    (row,) = [json.loads(x) for x in out.getvalue().splitlines()]
    assert row["type"] == "error" and row["message"].startswith(NO_NOTE_TO_CHANGE)
    assert "\n" not in row["message"]
    assert await service.author_note(KEY) is None
