"""The inline SQLite driver: statements run on the loop's thread, and a database locked by
another process is waited for with asyncio sleeps (the loop keeps running) up to the storage's
busy timeout, after which the unit of work gets ConflictError and nothing is half-written."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from adapters.storage import database
from adapters.storage.sqlite_inline import InlineConnection, InlineSQLiteDBAPI
from engine.errors import ConflictError
from tests.test_storage.support import World, open_test_storage

pytestmark = pytest.mark.asyncio


def _lock_from_elsewhere(path: Path) -> sqlite3.Connection:
    """A connection outside the storage (as another process's) holding the write lock."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    return other


async def test_sqlite_urls_run_on_the_inline_driver(tmp_path: Path) -> None:
    async with open_test_storage("sqlite", tmp_path=tmp_path) as storage:
        assert isinstance(storage.engine.dialect.dbapi, InlineSQLiteDBAPI)
        async with storage.engine.connect() as conn:
            raw = await conn.get_raw_connection()
            assert isinstance(raw.driver_connection, InlineConnection)
            # Statements run on this thread: no driver thread is started.
            assert not any("_connection_worker_thread" in t.name for t in threading.enumerate())
            assert (await conn.exec_driver_sql("PRAGMA busy_timeout")).scalar() == 0


async def test_a_lock_held_elsewhere_is_waited_for_without_blocking_the_loop(
    tmp_path: Path,
) -> None:
    async with open_test_storage("sqlite", tmp_path=tmp_path) as storage:
        opened = await World(storage).session()
        path = Path(storage.engine.url.database or "")
        other = _lock_from_elsewhere(path)
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        async def release_later() -> None:
            await asyncio.sleep(0.3)
            other.execute("COMMIT")

        tick = asyncio.create_task(ticker())
        release = asyncio.create_task(release_later())
        try:
            async with storage.unit_of_work() as uow:
                got = await uow.sessions.get(opened.session.id)
            assert got.id == opened.session.id
            # The loop ran on while the writer waited about 0.3 s for the lock.
            assert ticks >= 10
        finally:
            tick.cancel()
            await asyncio.gather(tick, release, return_exceptions=True)
            other.close()


async def test_a_lock_held_past_the_busy_timeout_is_a_conflict_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(database, "SQLITE_BUSY_TIMEOUT_MS", 100)
    async with open_test_storage("sqlite", tmp_path=tmp_path) as storage:
        world = World(storage)
        opened = await world.session()
        path = Path(storage.engine.url.database or "")
        other = _lock_from_elsewhere(path)
        try:
            with pytest.raises(ConflictError, match="busy"):
                async with storage.unit_of_work() as uow:
                    await uow.sessions.get(opened.session.id)
        finally:
            other.execute("ROLLBACK")
            other.close()
        async with storage.read() as uow:  # the storage works again once the lock is gone
            assert (await uow.sessions.get(opened.session.id)).id == opened.session.id


async def test_a_closed_connection_refuses_statements() -> None:
    connection = InlineConnection(sqlite3.connect(":memory:"), busy_timeout=0.1)
    cursor = connection.cursor()
    await cursor.execute("SELECT 1")
    assert await cursor.fetchall() == [(1,)]
    await connection.close()
    with pytest.raises(ValueError, match="no active connection"):
        connection.cursor()


async def test_errors_other_than_busy_are_not_retried() -> None:
    connection = InlineConnection(sqlite3.connect(":memory:"), busy_timeout=5.0)
    calls = 0

    def broken() -> None:
        nonlocal calls
        calls += 1
        raise sqlite3.OperationalError("no such table: nowhere")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        await connection.run(broken)
    assert calls == 1
    await connection.close()
