"""Two processes changing one session's settings at once both keep their change (issue 19).

Each storage stands for one process (its own connection pool). The first holds the session
row through ``get_for_update`` while the second changes another key; the second's wait is
observed in ``pg_stat_activity``, never timed. Before the settings change was one locked
read-then-write, the second finished at once and the first's write then undid it."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from adapters.storage import open_storage
from engine.timeline.service import TimelineService
from engine.timeline.values import SessionSettings
from tests.test_scale.process_support import fresh_database

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(60)]
WAIT_S = 20.0
"""Upper bound for something the test waits for (never a speed claim)."""


async def _waiting_on_a_lock(storage: object, query_start: str) -> None:
    engine = storage.engine  # type: ignore[attr-defined]
    sql = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND query LIKE :start"
    )
    while True:
        async with engine.connect() as conn:
            if (await conn.execute(sql, {"start": f"{query_start}%"})).scalar_one():
                return
        await asyncio.sleep(0.05)


async def test_a_settings_change_waits_for_another_and_both_are_kept(pg_url: str) -> None:
    async with fresh_database(pg_url) as url:
        first, second = await open_storage(url), await open_storage(url)
        try:
            opened = await TimelineService(first).open_session("console", "local", "race")
            session_id = opened.session.id
            async with first.unit_of_work() as uow:
                held = await uow.sessions.get_for_update(session_id)
                other = asyncio.ensure_future(
                    TimelineService(second).change_settings(session_id, {"memory_budget": 300})
                )
                try:
                    await asyncio.wait_for(_waiting_on_a_lock(first, "SELECT"), WAIT_S)
                    assert not other.done()
                    data = held.settings.to_json()
                    data["prompt_mode"] = "compat_plus"
                    await uow.sessions.update_settings(session_id, SessionSettings.from_json(data))
                except BaseException:
                    other.cancel()
                    raise
            changed = await asyncio.wait_for(other, WAIT_S)
            assert changed.settings.prompt_mode == "compat_plus"
            assert changed.settings.extra["memory_budget"] == 300
            async with first.read() as uow:
                stored = await uow.sessions.get(session_id)
            assert stored.settings == changed.settings
        finally:
            await first.close()
            await second.close()


async def test_concurrent_changes_of_different_keys_all_stay(pg_url: str) -> None:
    async with fresh_database(pg_url) as url:
        storages = [await open_storage(url) for _ in range(2)]
        try:
            opened = await TimelineService(storages[0]).open_session("console", "local", "many")
            session_id = opened.session.id
            changes = [
                TimelineService(storages[i % 2]).change_settings(session_id, {f"key_{i}": i})
                for i in range(12)
            ]
            await asyncio.wait_for(asyncio.gather(*changes), WAIT_S)
            async with storages[0].read() as uow:
                stored = await uow.sessions.get(session_id)
            assert {k: v for k, v in stored.settings.extra.items() if k.startswith("key_")} == {
                f"key_{i}": i for i in range(12)
            }
        finally:
            for storage in storages:
                await storage.close()
