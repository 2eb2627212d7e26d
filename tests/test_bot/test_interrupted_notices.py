"""Interrupted-reply notices (issue 19): recovery's ``floor.failed`` events reach the front end
of their platform, waiting (bounded) until it registers; a console tells its own session."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.storage import open_storage
from bot.app import chat
from bot.config import load_settings
from bot.notices import MAX_PENDING_NOTICES, InterruptedNotice, InterruptedNotices
from engine.ports import Event
from engine.turns.api import SessionKey
from tests.test_scale.interrupted_support import generating, generating_ids, lease


def interrupted(platform: str, floor: int, *, session: str = "s") -> Event:
    """Recovery's event for floor ``floor`` of ``platform``'s session ``session``."""
    return Event(
        name="floor.failed",
        payload={
            "floor_id": floor,
            "floor": floor,
            "error": "interrupted",
            "interrupted": True,
            "platform": platform,
            "realm": "r",
            "session": session,
            "branch": "main",
        },
    )


async def test_notices_wait_for_their_platform_and_go_out_once() -> None:
    notices = InterruptedNotices()
    told: list[InterruptedNotice] = []

    async def tell(notice: InterruptedNotice) -> None:
        told.append(notice)

    notices.on_event(interrupted("telegram", 1))  # before the front end started
    notices.on_event(interrupted("discord", 2))
    notices.on_event(Event(name="floor.failed", payload={"floor": 3, "error": "model"}))
    assert [n.floor for n in notices.pending] == [1, 2]  # a turn's own failure is not one
    worker = asyncio.create_task(notices.run())
    try:
        notices.register("telegram", tell)
        notices.on_event(interrupted("telegram", 4))
        for _ in range(50):
            if len(told) == 2:
                break
            await asyncio.sleep(0.01)
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
    key = SessionKey(platform="telegram", realm="r", key="s")
    assert told == [
        InterruptedNotice(key=key, branch="main", floor=1),
        InterruptedNotice(key=key, branch="main", floor=4),
    ]
    assert [n.floor for n in notices.pending] == [2]  # Discord is not served here


async def test_a_failed_delivery_is_logged_and_the_next_goes_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    notices = InterruptedNotices()
    told: list[int] = []

    async def tell(notice: InterruptedNotice) -> None:
        if notice.floor == 1:
            raise RuntimeError("chat gone")
        told.append(notice.floor)

    notices.register("telegram", tell)
    worker = asyncio.create_task(notices.run())
    try:
        with caplog.at_level(logging.ERROR, logger="bot.notices"):
            notices.on_event(interrupted("telegram", 1))
            notices.on_event(interrupted("telegram", 2))
            for _ in range(50):
                if told:
                    break
                await asyncio.sleep(0.01)
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
    assert told == [2]
    assert "could not tell" in caplog.text


def test_waiting_notices_are_bounded() -> None:
    assert MAX_PENDING_NOTICES == 200
    notices = InterruptedNotices()
    for floor in range(MAX_PENDING_NOTICES + 5):
        notices.on_event(interrupted("discord", floor))
    pending = notices.pending
    assert len(pending) == MAX_PENDING_NOTICES and pending[0].floor == 5  # the oldest went


async def _no_lines() -> AsyncIterator[str]:
    return
    yield ""  # an async generator that ends at once


async def _chat(path: Path, session: str) -> list[dict[str, str]]:
    out = io.StringIO()
    code = await chat(
        load_settings(path, environ={}),
        session=session,
        user="Ann",
        jsonl=True,
        files={},
        lines=_no_lines,
        out=out,
    )
    assert code == 0, out.getvalue()
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def test_a_console_restarted_after_a_crash_says_its_reply_was_interrupted(
    tmp_path: Path,
) -> None:
    db = tmp_path / "t.db"
    path = tmp_path / "t.toml"
    path.write_text(f'[database]\nurl = "sqlite+aiosqlite:///{db}"\n[session]\nmemory = false\n')
    for session in ("mine", "other"):
        await _chat(path, session)
    storage = await open_storage(f"sqlite+aiosqlite:///{db}")
    try:
        await lease(storage, "crashed", renewed_at=datetime.now(UTC) - timedelta(hours=1))
        for session in ("mine", "other"):
            key = SessionKey(platform="console", realm="local", key=session)
            await generating(storage, key, "lost words", owner="crashed")
    finally:
        await storage.close()

    said = await _chat(path, "mine")
    line = {
        "type": "error",
        "message": "the reply to floor 1 on branch main was interrupted",
        "retry": "/regen",
    }
    assert said.count(line) == 1, said
    assert line not in await _chat(path, "mine")  # told once: nothing is left to fail
    # The other session's console was not running: its floor waits for its own recovery.
    storage = await open_storage(f"sqlite+aiosqlite:///{db}")
    try:
        assert len(await generating_ids(storage)) == 1
    finally:
        await storage.close()
    assert line in await _chat(path, "other")
