"""The console's ``/note`` and ``/info`` on the real engine (SQLite file, offline model) and
in plain text."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from adapters.console.frontend import ConsoleFrontend
from engine.prompt.inputs import AuthorNote
from engine.turns.api import SessionKey
from engine.turns.notes import MAX_NOTE_DEPTH
from engine.turns.service import TavernService
from tests.fakes.roleplay import FakeRoleplayService

pytestmark = pytest.mark.timeout(60)
KEY = SessionKey(platform="console", realm="local", key="note-test")
TEXT = 'Don\'t rush: the "slow" road.'


def _notes_in(dry_run_line: str) -> list[dict[str, Any]]:
    report = json.loads(dry_run_line)
    return [m for m in report["messages"] if any(s["kind"] == "author_note" for s in m["sources"])]


async def test_note_flow_on_the_engine(offline_engine: TavernService) -> None:
    service = offline_engine
    await service.open_session(KEY)
    out = io.StringIO()
    console = ConsoleFrontend(service=service, key=KEY, user="Ann", out=out, jsonl=True)
    script = [
        "/note",
        "hello",
        f"/note depth=1 role=user {TEXT}",
        "/note interval=0",
        "/dryrun quiet",
        "/note depth=99999",
        "/note colour=red hi",
        "/note interval=1",
        "/dryrun loud",
        "/note",
    ]
    for line in script:
        assert await console.handle_line(line)
    stored = await service.author_note(KEY)
    assert await console.handle_line("/note off")
    cleared = await service.author_note(KEY)

    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    infos = [r for r in rows if r["type"] == "info"]
    assert infos[0] == {"type": "info", "message": "No Author's Note.", "note": None}
    assert infos[1]["message"].startswith("set: Author's Note (in the chat at depth 1 as user")
    assert infos[1]["note"] == {
        "text": TEXT,
        "interval": 1,
        "position": "in_chat",
        "depth": 1,
        "role": "user",
    }
    assert infos[2]["note"]["interval"] == 0 and infos[2]["note"]["text"] == TEXT
    assert _notes_in(infos[3]["message"]) == []  # interval 0: never inserted
    errors = [r["message"] for r in rows if r["type"] == "error"]
    assert errors == [
        f"author_note.depth must be a whole number from 0 to {MAX_NOTE_DEPTH}, not 99999",
        "unknown /note option 'colour'; options: depth, interval, position, role "
        "(put -- before a text that starts with name=value)",
    ]
    (note,) = _notes_in(infos[5]["message"])
    assert (note["role"], note["content"]) == ("user", TEXT)
    assert infos[6]["note"]["depth"] == 1  # the refused depth changed nothing
    assert stored == AuthorNote(text=TEXT, depth=1, role=1, interval=1)
    assert cleared is None
    assert rows[-1] == {"type": "info", "message": "Author's Note cleared.", "note": None}


async def test_info_carries_the_note_on_the_engine(offline_engine: TavernService) -> None:
    service = offline_engine
    await service.open_session(KEY)
    out = io.StringIO()
    console = ConsoleFrontend(service=service, key=KEY, user="Ann", out=out, jsonl=True)
    for line in ("/info", "/note depth=2 Keep it short.", "/info", "/note off", "/info"):
        assert await console.handle_line(line)

    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    before, _, shown, _, after = rows
    assert before["message"].startswith("session note-test: character (default), preset (none)")
    assert "\n  branch main; branches: main (0 floors)\n" in before["message"]
    assert before["message"].endswith("\n  No Author's Note.") and before["note"] is None
    assert shown["message"].endswith(
        "\n  Author's Note (in the chat at depth 2 as system, every turn): Keep it short."
    )
    assert shown["note"] == {
        "text": "Keep it short.",
        "interval": 1,
        "position": "in_chat",
        "depth": 2,
        "role": "system",
    }
    assert after == before


async def test_note_in_plain_text() -> None:
    service = FakeRoleplayService()
    await service.open_session(KEY, character="Aqua")
    out = io.StringIO()
    console = ConsoleFrontend(service=service, key=KEY, user="Kazuma", out=out)
    script = ("/info", "/note position=before_prompt Stay in Axel.", "/note role=narrator")
    for line in (*script, "/help", "/info"):
        assert await console.handle_line(line)
    every = out.getvalue().splitlines()
    options = [line for line in every if line.startswith("  options: mode compat_plus, tools ")]
    assert len(options) == 2  # /info's session options line (issue 13), left out below
    shown = [line for line in every if line not in options]
    assert shown[:3] == [
        "* session note-test: character Aqua, preset (none), world books (none)",
        "  branch main; branches: main (0 floors)",
        "  No Author's Note.",
    ]
    assert shown[3] == "* set: Author's Note (before the main prompt, every turn): Stay in Axel."
    assert shown[4] == "! author_note.role must be one of system, user, assistant, not 'narrator'"
    assert "/note [off |" in shown[5] and "/info" in shown[5]
    assert shown[6:] == [
        "* session note-test: character Aqua, preset (none), world books (none)",
        "  branch main; branches: main (0 floors)",
        "  Author's Note (before the main prompt, every turn): Stay in Axel.",
    ]
    assert service.sessions[KEY].note == AuthorNote(text="Stay in Axel.", position=2)
