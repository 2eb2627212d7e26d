"""Bringing a database to the newest schema with the Alembic migrations shipped here.

``upgrade(url)`` is for synchronous callers (``tavernbot db upgrade``, or before the event loop
starts; it also works from inside a running loop, on a helper thread); ``await
upgrade_async(url)`` or ``await upgrade_engine(engine)`` is for code already inside the loop
(``tavernbot run``). Both run Alembic on a connection of an async engine through ``run_sync``.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.database import create_engine

HERE = Path(__file__).resolve().parent

MIGRATION_LOCK_KEY = 0x7461_7665_726E_6D67
"""PostgreSQL advisory lock taken for a migration ("tavernmg"): processes started together on a
fresh database migrate one after the other; the later ones find the schema at head."""


def alembic_config() -> Config:
    """The Alembic configuration shipped inside the package."""
    return Config(str(HERE / "alembic.ini"))


def _upgrade_on(connection: Any, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


async def upgrade_engine(engine: AsyncEngine, revision: str = "head") -> None:
    """Apply every migration up to ``revision`` on ``engine``'s database."""
    async with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            # Held to the transaction's end: two processes creating the same tables at once
            # would collide in PostgreSQL's catalogue (a duplicate type name).
            await connection.execute(
                text("select pg_advisory_xact_lock(:key)"), {"key": _signed64(MIGRATION_LOCK_KEY)}
            )
        await connection.run_sync(_upgrade_on, revision)


def _signed64(key: int) -> int:
    """``key`` as PostgreSQL's signed bigint."""
    return key - (1 << 64) if key >= 1 << 63 else key


async def current_revision(engine: AsyncEngine) -> str | None:
    """The revision the database is at (None: never migrated)."""

    def read(connection: Any) -> str | None:
        return MigrationContext.configure(connection).get_current_revision()

    async with engine.connect() as connection:
        return await connection.run_sync(read)


def head_revision() -> str:
    """The newest revision shipped."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


async def upgrade_async(url: str, *, schema: str | None = None) -> None:
    """Open ``url``, migrate it to head, and close it again."""
    engine = create_engine(url, schema=schema)
    try:
        await upgrade_engine(engine)
    finally:
        await engine.dispose()


def upgrade(url: str, *, schema: str | None = None) -> None:
    """Synchronous :func:`upgrade_async`. Outside an event loop it runs one; called from
    inside a running loop it migrates on a helper thread with its own loop and waits (an
    async engine must not be shared between loops), blocking the caller until done."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(upgrade_async(url, schema=schema))
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tavernbot-migrate") as pool:
        pool.submit(asyncio.run, upgrade_async(url, schema=schema)).result()
