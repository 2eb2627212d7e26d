"""Interrupted-reply notices (issue 19): recovery's ``floor.failed`` events reach the front end
of their platform, waiting (bounded) until it registers; a console tells its own session; a
``tavernbot run`` fails only the floors of chats it can tell (its platforms and shards)."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.discord.interrupted import SHARD_ID_SHIFT
from adapters.storage import open_storage
from bot.app import chat
from bot.config import load_settings
from bot.notices import MAX_PENDING_NOTICES, InterruptedNotice, InterruptedNotices, run_claims
from engine.ports import Event
from engine.timeline.leases import LeaseKeeper
from engine.timeline.service import TimelineService
from engine.turns.api import SessionKey
from tests.test_scale.interrupted_support import FixedClock, generating, generating_ids, lease


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


async def test_a_process_fails_only_the_floors_of_chats_it_can_tell(tmp_path: Path) -> None:
    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path / 'c.db'}")
    try:
        timeline = TimelineService(storage)
        for platform in ("telegram", "discord"):
            await timeline.open_session(platform, "1", "10")
        await lease(storage, "crashed", renewed_at=datetime.now(UTC) - timedelta(hours=1))
        on_telegram = await generating(storage, _key("telegram"), "hi", owner="crashed")
        on_discord = await generating(storage, _key("discord"), "hi", owner="crashed")
        keeper = LeaseKeeper(storage, clock=FixedClock(datetime.now(UTC)))

        def telegram_only(platform: str, realm: str) -> bool:
            return platform == "telegram"

        failed = await timeline.recover(keeper, claims=telegram_only)
        assert [f.id for f in failed] == [on_telegram]
        assert await generating_ids(storage) == {on_discord}
        async with storage.read() as uow:  # the floor left to another process keeps its page
            assert [p.floor_id for p in await uow.pages.in_status("pending")] == [on_discord]
        assert [f.id for f in await timeline.recover(keeper)] == [on_discord]
    finally:
        await storage.close()


def _key(platform: str) -> SessionKey:
    return SessionKey(platform=platform, realm="1", key="10")


def test_run_claims_the_platforms_and_shards_it_serves(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text('[telegram]\ntoken = "1:x"\n')
    claims = run_claims(load_settings(path, environ={}))
    assert claims("telegram", "5") and claims("elsewhere", "5")
    assert not claims("discord", "5") and not claims("console", "local")
    guild = 3 << SHARD_ID_SHIFT  # on shard 3 of 4
    path.write_text('[discord]\ntoken = "x"\nshard_count = 4\nshard_ids = [2, 3]\n')
    claims = run_claims(load_settings(path, environ={}))
    assert claims("discord", str(guild)) and not claims("discord", "dm:7")
    assert not claims("telegram", "5") and not claims("console", "local")
    path.write_text("")
    claims = run_claims(load_settings(path, environ={}))
    assert claims("console", "local") and not claims("telegram", "5")
