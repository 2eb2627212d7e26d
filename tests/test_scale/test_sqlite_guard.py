"""SQLite is single-host, one bot process at a time: a second holder of the lock file waits
(and says so once) until the first lets go."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adapters.storage.sqlite_guard import (
    LOCK_SUFFIX,
    RETRY_S,
    hold_sqlite_file,
    lock_path,
    waiting_message,
)

pytestmark = pytest.mark.timeout(60)


def test_the_lock_file_sits_next_to_the_database(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"
    assert lock_path(url) == tmp_path / f"bot.db{LOCK_SUFFIX}"
    assert lock_path("sqlite+aiosqlite:///:memory:") is None
    assert waiting_message(tmp_path / "bot.db.lock") == (
        f"another tavernbot process is using {tmp_path / 'bot.db'}; waiting for it to stop..."
    )
    assert RETRY_S > 0


async def test_a_second_holder_waits_until_the_first_lets_go(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'sub' / 'bot.db'}"
    said: list[str] = []
    waiting = asyncio.Event()
    second_in = asyncio.Event()

    def say(message: str) -> None:
        said.append(message)
        waiting.set()

    async def second() -> None:
        async with hold_sqlite_file(url, on_wait=say):
            second_in.set()

    async with hold_sqlite_file(url, on_wait=say):
        assert said == []
        task = asyncio.create_task(second())
        await asyncio.wait_for(waiting.wait(), 20)
        assert not second_in.is_set()
    await asyncio.wait_for(task, 20)
    assert second_in.is_set()
    assert len(said) == 1 and "is using" in said[0]


async def test_a_cancelled_waiter_takes_nothing(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"
    said: list[str] = []
    waiting = asyncio.Event()

    def say(message: str) -> None:
        said.append(message)
        waiting.set()

    async with hold_sqlite_file(url, on_wait=say):

        async def wait() -> None:
            async with hold_sqlite_file(url, on_wait=say):
                pass

        task = asyncio.create_task(wait())
        await asyncio.wait_for(waiting.wait(), 20)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    # the file is free again: taken at once, without a waiting message
    async with hold_sqlite_file(url, on_wait=say):
        assert len(said) == 1
