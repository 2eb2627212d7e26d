"""The console front end against the service contract (in-memory double)."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from adapters.console.frontend import ConsoleFrontend, guess_kind
from engine.turns.api import SessionKey
from tests.fakes.roleplay import FakeRoleplayService

KEY = SessionKey(platform="console", realm="local", key="demo")


async def _lines(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        yield line + "\n"


async def _play(*lines: str, jsonl: bool = True) -> tuple[list[dict[str, Any]] | str, Any]:
    service = FakeRoleplayService()
    await service.open_session(KEY, character="Aqua")
    out = io.StringIO()
    front = ConsoleFrontend(service=service, key=KEY, user="Kazuma", out=out, jsonl=jsonl)
    await front.run(_lines(*lines))
    if not jsonl:
        return out.getvalue(), front
    return [json.loads(row) for row in out.getvalue().splitlines()], front


async def test_reply_regen_and_swipe_lines() -> None:
    rows, _ = await _play("hello", "/regen", "/swipe <", "/swipe >")
    replies = [r for r in rows if r["type"] == "reply"]
    assert [(r["floor"], r["page"], r["pages"]) for r in replies] == [
        (1, 1, 1),
        (1, 2, 2),
        (1, 1, 2),
        (1, 2, 2),
    ]
    assert "Kazuma: hello" in replies[0]["text"] and replies[0]["branch"] == "main"
    assert replies[2]["text"] == replies[0]["text"]


async def test_fork_switch_and_branch_names() -> None:
    rows, front = await _play("one", "two", "/fork 1", "three", "/branches", "/switch main")
    replies = [r for r in rows if r["type"] == "reply"]
    assert replies[-1]["branch"] == "main-1" and replies[-1]["floor"] == 2
    infos = [r["message"] for r in rows if r["type"] == "info"]
    assert any("main-1*" in m for m in infos)
    assert front.branch == "main"


async def test_vars_and_setvar_with_scopes() -> None:
    rows, _ = await _play(
        "hi", "/setvar mood happy branch", "/vars", "/vars branch", "/vars bogus"
    )
    views = [r for r in rows if r["type"] == "vars"]
    assert views[0] == {"type": "vars", "scope": "effective", "vars": {"mood": "happy"}}
    assert views[1]["scope"] == "branch" and views[1]["vars"] == {"mood": "happy"}
    assert rows[-1]["type"] == "error" and "bogus" in rows[-1]["message"]


async def test_errors_are_reported_and_play_goes_on() -> None:
    rows, _ = await _play("/swipe <", "/fork x", "/nope", "hi")
    kinds = [r["type"] for r in rows]
    assert kinds[:3] == ["error", "error", "error"]
    assert kinds[-1] == "reply"


async def test_quit_stops_reading() -> None:
    rows, _ = await _play("hi", "/quit", "never")
    assert len([r for r in rows if r["type"] == "reply"]) == 1


async def test_plain_mode_streams_text_and_marks_pages() -> None:
    text, _ = await _play("hello", jsonl=False)
    assert isinstance(text, str)
    assert "Aqua: I hear you. You said: Kazuma: hello" in text
    assert "‹ 1/1 › [main #1]" in text


async def test_import_and_kind_guessing(tmp_path: Path) -> None:
    card = tmp_path / "aqua.json"
    card.write_text(json.dumps({"name": "Aqua", "description": "goddess"}))
    rows, _ = await _play(f"/import {card}", f"/import {tmp_path / 'missing.json'}")
    assert rows[0]["type"] == "info" and "card 'Aqua'" in rows[0]["message"]
    assert rows[1]["type"] == "error" and "cannot read" in rows[1]["message"]
    assert guess_kind(Path("x.json"), b'{"entries": {}}') == "worldbook"
    assert guess_kind(Path("x.json"), b'{"prompts": []}') == "preset"
    assert guess_kind(Path("x.json"), b'[{"findRegex": "/a/"}]') == "regex"
    assert guess_kind(Path("x.png"), b"\x89PNG") == "card"
