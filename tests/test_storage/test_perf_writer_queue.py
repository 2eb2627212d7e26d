"""SQLite writers of one process queue on the storage's own lock (in order, no busy-handler
polling); readers never wait for it; a writer that cannot get its turn within the busy timeout
gets ConflictError, as a locked database would give it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adapters.storage import uow as uow_module
from engine.errors import ConflictError
from tests.test_storage.support import World, open_test_storage

pytestmark = pytest.mark.asyncio


async def test_writers_take_turns_and_readers_do_not_wait(tmp_path: Path) -> None:
    async with open_test_storage("sqlite", tmp_path=tmp_path) as storage:
        opened = await World(storage).session()
        order: list[str] = []
        first_in = asyncio.Event()
        release = asyncio.Event()

        async def first() -> None:
            async with storage.unit_of_work() as uow:
                order.append("first in")
                first_in.set()
                await release.wait()
                await uow.sessions.get(opened.session.id)
                order.append("first out")

        async def second() -> None:
            await first_in.wait()
            async with storage.unit_of_work() as uow:
                order.append("second in")
                await uow.sessions.get(opened.session.id)

        tasks = [asyncio.create_task(first()), asyncio.create_task(second())]
        await first_in.wait()
        async with storage.read() as uow:  # a reader is not queued behind the writer
            assert (await uow.sessions.get(opened.session.id)).id == opened.session.id
            order.append("read")
        release.set()
        await asyncio.gather(*tasks)
        assert order == ["first in", "read", "first out", "second in"]


async def test_a_writer_waiting_past_the_busy_timeout_gets_a_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(uow_module, "SQLITE_BUSY_TIMEOUT_MS", 50)
    async with open_test_storage("sqlite", tmp_path=tmp_path) as storage:
        held = asyncio.Event()
        release = asyncio.Event()

        async def holder() -> None:
            async with storage.unit_of_work():
                held.set()
                await release.wait()

        task = asyncio.create_task(holder())
        await held.wait()
        with pytest.raises(ConflictError, match="busy"):
            async with storage.unit_of_work():
                pass
        release.set()
        await task
        async with storage.unit_of_work() as uow:  # the queue works again afterwards
            assert await uow.sessions.find("discord", "none") is None
