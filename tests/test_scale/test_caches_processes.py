"""Caches that stay true across real processes (issue 19): two ``tavernbot chat`` processes on
one PostgreSQL database, each having played (so each holds its per-process caches); a persona
set, a card imported again and a persona dropped through the second are what the first's next
prompt and floor use."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from adapters.storage import open_storage
from tests.test_e2e.console import ConsoleProcess, chat_env
from tests.test_scale.caches_support import card

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(150)]


@pytest.fixture
async def database(pg_url: str) -> AsyncIterator[str]:
    """A database of its own on the test server (processes connect by URL only)."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    admin = create_async_engine(pg_url, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            await conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield make_url(pg_url).set(database=name).render_as_string(hide_password=False)
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        await admin.dispose()


async def _prompt(console: ConsoleProcess) -> str:
    """The prompt the console's next message would get (``/dryrun``), as one text."""
    await console.send("/dryrun what now?")
    while True:
        line = await console.read()
        if line["type"] == "error":
            raise AssertionError(line)
        if line["type"] == "info" and str(line.get("message", "")).startswith("{"):
            result: dict[str, Any] = json.loads(line["message"])
            return "\n".join(str(m.get("content", "")) for m in result["messages"])


async def _speakers(url: str) -> list[str]:
    """The stored name of each floor's user line, floor by floor (the main branch)."""
    storage = await open_storage(url, migrate=False)
    try:
        async with storage.unit_of_work() as uow:
            floors = sorted(await uow.floors.in_state("committed"), key=lambda f: f.seq)
            messages = await uow.messages.of_floors([f.id for f in floors])
    finally:
        await storage.close()
    order = {f.id: f.seq for f in floors}
    users = [m for m in messages if m.role == "user"]
    return [str(m.speaker_name) for m in sorted(users, key=lambda m: order[m.floor_id])]


async def test_changes_through_one_process_reach_the_other_ones_next_turn(
    database: str, tmp_path: Path
) -> None:
    cards = tmp_path / "cards"
    cards.mkdir()
    env = {**chat_env(tmp_path / "unused.db", None), "DATABASE_URL": database}
    first = await ConsoleProcess.start(env, "--session", "shared", cwd=tmp_path)
    second: ConsoleProcess | None = None
    try:
        (cards / "Mira.json").write_bytes(card("Mira", "keeps bees"))
        await first.ask(f"/import {cards / 'Mira.json'}", kinds=("info", "error"))
        await first.ask("/persona Aria a wandering bard", kinds=("info", "error"))
        assert (await first.ask("hello"))["floor"] == 1
        before = await _prompt(first)
        assert "keeps bees" in before and "a wandering bard" in before

        second = await ConsoleProcess.start(env, "--session", "shared", cwd=tmp_path)
        assert (await second.ask("hello from two"))["floor"] == 2
        (cards / "Mira.json").write_bytes(card("Mira", "sails ships"))
        await second.ask(f"/import {cards / 'Mira.json'}", kinds=("info", "error"))
        await second.ask("/persona Brann a retired blacksmith", kinds=("info", "error"))

        after = await _prompt(first)
        assert "sails ships" in after and "keeps bees" not in after
        assert "a retired blacksmith" in after and "a wandering bard" not in after
        reply = await first.ask("and now?")
        assert (reply["type"], reply["floor"], reply["character"]) == ("reply", 3, "Mira")

        await second.ask("/persona off", kinds=("info", "error"))
        assert "a retired blacksmith" not in await _prompt(first)
        assert await first.close() == 0
        assert await second.close() == 0
        assert await _speakers(database) == ["Aria", "Aria", "Brann"]
    finally:
        for console in (first, second):
            if console is not None and console.proc.returncode is None:
                console.proc.kill()
                await console.proc.wait()
