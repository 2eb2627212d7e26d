"""Two ``tavernbot chat`` processes on one database (issue 12): the second one's start-up
recovery must not fail the turn the first one is still streaming, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from adapters.storage import create_engine, open_storage
from tests.fakes.openai_server import QUIET_MEMORY_AGENT as AGENT
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_e2e.console import ConsoleProcess, chat_env

pytestmark = pytest.mark.timeout(120)

STORY = "a story told to the very end"


@pytest.fixture
async def pg_database(pg_url: str) -> AsyncIterator[str]:
    """The URL of a fresh database on the test server (processes cannot share a schema
    setting through a URL), dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    engine = create_engine(pg_url)
    admin = engine.execution_options(isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            await conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(pg_url).set(database=name).render_as_string(hide_password=False)
    finally:
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await engine.dispose()


async def _second_process_leaves_the_first_ones_turn(url: str, tmp_path: Path) -> None:
    async with FakeOpenAIServer(max_requests=20, lifetime_s=100.0, memory_agent=AGENT) as fake:
        env = {**chat_env(tmp_path / "unused.db", fake.base_url), "DATABASE_URL": url}
        first = await ConsoleProcess.start(env, "--session", "shared", cwd=tmp_path)
        assert (await first.ask("before"))["floor"] == 1
        release = asyncio.Event()
        fake.script(FakeReply(text=STORY, chunk_chars=4, hold=release))
        await first.send("tell me a story")
        await fake.wait_requests(2, timeout_s=20.0)  # floor 2 is generating, held mid-stream

        second = await ConsoleProcess.start(env, "--session", "shared", cwd=tmp_path)
        # Answering a command means the second process finished its start-up recovery.
        await second.ask("/history", kinds=("info",))
        release.set()
        reply = await first.read()
        while reply["type"] not in ("reply", "error"):
            reply = await first.read()
        assert (reply["type"], reply.get("floor"), reply.get("text")) == ("reply", 2, STORY)
        after = await second.ask("and then?")
        assert (after["type"], after["floor"]) == ("reply", 3)
        assert await first.close() == 0
        assert await second.close() == 0

    storage = await open_storage(url, migrate=False)
    try:
        async with storage.unit_of_work() as uow:
            assert await uow.floors.in_state("failed") == []
            (floor,) = [f for f in await uow.floors.in_state("committed") if f.seq == 2]
            (message,) = [
                m for m in await uow.messages.of_floors([floor.id]) if m.page_id is not None
            ]
            assert message.raw == STORY
    finally:
        await storage.close()


async def test_a_second_process_keeps_the_first_ones_reply_on_sqlite(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'two.db'}"
    await _second_process_leaves_the_first_ones_turn(url, tmp_path)


@pytest.mark.postgres
async def test_a_second_process_keeps_the_first_ones_reply_on_postgres(
    pg_database: str, tmp_path: Path
) -> None:
    await _second_process_leaves_the_first_ones_turn(pg_database, tmp_path)
