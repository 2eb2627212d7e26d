"""Isolated databases for storage tests: a SQLite file per test, or a PostgreSQL schema per
test (created, used through ``search_path``, and dropped afterwards)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import text

from adapters.storage import SqlStorage, create_engine, upgrade, upgrade_engine
from engine.timeline.history import HistoryService
from engine.timeline.service import OpenedSession, TimelineService
from engine.timeline.values import NewMessage, PageContext
from engine.variables.service import VariableService
from engine.variables.values import Mutation, Scope

_TEMPLATE: list[Path] = []


def _sqlite_template() -> Path:
    """A SQLite file migrated to head once per test run (removed when the run ends)."""
    if not _TEMPLATE:
        folder = Path(tempfile.mkdtemp(prefix="tavernbot-template-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        upgrade(sqlite_url(folder))  # runs on a helper thread when a loop is running
        _TEMPLATE.append(folder / "tavernbot.db")
    return _TEMPLATE[0]


def sqlite_url(tmp_path: Path) -> str:
    """A SQLite file database inside the test's temporary directory."""
    return f"sqlite+aiosqlite:///{tmp_path / 'tavernbot.db'}"


@asynccontextmanager
async def pg_schema(pg_url: str) -> AsyncIterator[str]:
    """A fresh, uniquely named schema on the test server, dropped on exit."""
    schema = f"t_{uuid.uuid4().hex[:16]}"
    admin = create_engine(pg_url)
    try:
        async with admin.begin() as conn:
            await conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        yield schema
    finally:
        async with admin.begin() as conn:
            await conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        await admin.dispose()


@asynccontextmanager
async def open_test_storage(
    kind: str, *, tmp_path: Path, pg_url: str | None = None, migrate: bool = True
) -> AsyncIterator[SqlStorage]:
    """A migrated storage on SQLite (``kind`` "sqlite") or PostgreSQL ("postgres")."""
    if kind == "sqlite":
        if migrate:  # copying a migrated file is much faster than migrating each time
            shutil.copyfile(_sqlite_template(), tmp_path / "tavernbot.db")
        engine = create_engine(sqlite_url(tmp_path))
        storage = SqlStorage(engine)
        try:
            yield storage
        finally:
            await storage.close()
        return
    assert pg_url is not None
    async with pg_schema(pg_url) as schema:
        engine = create_engine(pg_url, schema=schema)
        storage = SqlStorage(engine)
        try:
            if migrate:
                await upgrade_engine(engine)
            yield storage
        finally:
            await storage.close()


class World:
    """The services over one storage, with shortcuts for whole turns."""

    def __init__(self, storage: SqlStorage) -> None:
        self.storage = storage
        self.timeline = TimelineService(storage)
        self.variables = VariableService(storage)
        self.history = HistoryService(storage)

    async def session(self, key: str = "chan", realm: str = "guild") -> OpenedSession:
        """Get or create a Discord-like session."""
        return await self.timeline.open_session("discord", realm, key)

    async def turn(
        self, branch_id: int, writes: Sequence[Mutation] = (), *, text: str = "reply"
    ) -> PageContext:
        """A whole committed turn: input, generating, one page, commit."""
        floor = await self.timeline.open_floor(
            branch_id, [NewMessage(role="user", raw=f"say {text}", speaker_id="u1")]
        )
        await self.timeline.start_generating(floor.id)
        page = await self.timeline.add_page(floor.id)
        return await self.timeline.commit_page(
            page.id, messages=[NewMessage(role="assistant", raw=text)], writes=writes
        )

    async def regenerate(
        self, floor_id: int, writes: Sequence[Mutation] = (), *, text: str = "again"
    ) -> PageContext:
        """A committed regenerate of the latest floor (the new page becomes active)."""
        page = await self.timeline.add_page(floor_id)
        return await self.timeline.commit_page(
            page.id, messages=[NewMessage(role="assistant", raw=text)], writes=writes
        )


def put(scope: Scope, key: str, value: Any) -> Mutation:
    """Shorthand for a set mutation."""
    return Mutation.set(scope, key, value)
