"""Two ``tavernbot chat`` processes on one PostgreSQL database (issue 12): the second one's
start-up recovery must not fail the turn the first one is still streaming. (On SQLite a
second process waits until the first one stops, issue 19:
tests/test_scale/test_sqlite_single_process.py.)"""

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


BEAT_S = 0.2
"""The processes' lease heartbeat here: a renewal after start-up shows its recovery ran."""
LEASES = text("SELECT owner, heartbeat_at FROM process_lease")


async def _second_process_leaves_the_first_ones_turn(url: str, tmp_path: Path) -> None:
    config = tmp_path / "tavernbot.toml"
    config.write_text(f"[database]\nlease_heartbeat_s = {BEAT_S}\n")
    async with FakeOpenAIServer(max_requests=20, lifetime_s=100.0, memory_agent=AGENT) as fake:
        env = {**chat_env(tmp_path / "unused.db", fake.base_url), "DATABASE_URL": url}
        args = ("--session", "shared", "--config", str(config))
        first = await ConsoleProcess.start(env, *args, cwd=tmp_path)
        assert (await first.ask("before"))["floor"] == 1
        release = asyncio.Event()
        fake.script(FakeReply(text=STORY, chunk_chars=4, hold=release))
        await first.send("tell me a story")
        await fake.wait_requests(2, timeout_s=20.0)  # floor 2 is generating, held mid-stream

        db = create_engine(url)
        try:
            async with db.connect() as conn:
                (owner_first,) = [row.owner for row in await conn.execute(LEASES)]
            second = await ConsoleProcess.start(env, *args, cwd=tmp_path)
            # The second's console waits for the branch (issue 19: its greeting check queues
            # behind the first one's turn); two renewals of its lease after its start-up
            # mean its recovery ran.
            beats: set[object] = set()
            async with asyncio.timeout(60):
                while len(beats) < 3:  # the database is all there is to look at
                    async with db.connect() as conn:
                        rows = await conn.execute(LEASES)
                        beats.update(r.heartbeat_at for r in rows if r.owner != owner_first)
                    await asyncio.sleep(BEAT_S / 2)
        finally:
            await db.dispose()
        release.set()
        reply = await first.read()
        while reply["type"] not in ("reply", "error"):
            reply = await first.read()
        assert (reply["type"], reply.get("floor"), reply.get("text")) == ("reply", 2, STORY)
        await second.ask("/history", kinds=("info",))
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


@pytest.mark.postgres
async def test_a_second_process_keeps_the_first_ones_reply_on_postgres(
    pg_database: str, tmp_path: Path
) -> None:
    await _second_process_leaves_the_first_ones_turn(pg_database, tmp_path)
