"""The console front end on the real engine (SQLite file, offline model), in-process."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from adapters.console.frontend import ConsoleFrontend
from engine.turns.api import SessionKey
from engine.turns.service import TavernService

pytestmark = pytest.mark.timeout(60)
KEY = SessionKey(platform="console", realm="local", key="console-test")


async def test_console_commands_on_the_engine(
    tmp_path: Path, offline_engine: TavernService
) -> None:
    service = offline_engine
    await service.open_session(KEY)
    book = tmp_path / "town.json"
    book.write_text(json.dumps({"entries": {"0": {"uid": 0, "key": ["inn"], "content": "Warm."}}}))
    out = io.StringIO()
    console = ConsoleFrontend(service=service, key=KEY, user="Ann", out=out, jsonl=True)
    script = [
        "hello",
        "again",
        "/fork 1",
        "/branches",
        "side story",
        "/switch main",
        "/setvar coins 3",
        "/vars chat",
        f"/import {book}",
        "/dryrun at the inn",
        "/history",
        "/swipe >",
        "/memory",
    ]
    for line in script:
        assert await console.handle_line(line)
    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    replies = [r for r in rows if r["type"] == "reply"]
    assert [(r["branch"], r["floor"]) for r in replies] == [
        ("main", 1),
        ("main", 2),
        ("main-1", 2),
        ("main", 2),
    ]
    infos = [r["message"] for r in rows if r["type"] == "info"]
    assert any(m.startswith("branches: main (2 floors), main-1* (1 floor)") for m in infos)
    assert any(m == "imported worldbook 'town'" for m in infos)
    dry = json.loads(next(m for m in infos if m.startswith("{")))
    assert any("Warm." in m["content"] for m in dry["messages"])
    assert {"type": "vars", "scope": "chat", "vars": {"coins": "3"}} in rows
    assert [r["message"] for r in rows if r["type"] == "error"][-1].startswith("memory")
