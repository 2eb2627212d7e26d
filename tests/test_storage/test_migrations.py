"""Migrations: empty -> head on SQLite and PostgreSQL, and the models agree with them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

from adapters.storage import create_engine, open_storage, upgrade, upgrade_async, upgrade_engine
from adapters.storage.migrate import current_revision, head_revision
from adapters.storage.models import Base
from tests.test_storage.support import open_test_storage, pg_schema, sqlite_url

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
TABLES = {
    "realm",
    "session",
    "branch",
    "floor",
    "page",
    "message",
    "platform_link",
    "asset",
    "variable_log",
    "variable_value",
    "variable_snapshot",
    "memory_record",
    "memory_relation",
    "memory_job",
    "process_lease",
    "telegram_update",
    "role_lease",
    "memory_unit_vector",
    "web_token",
    "memory_revision",
    "page_itemization",
    "alembic_version",
}


def _diff(connection: Any) -> list[Any]:
    return compare_metadata(MigrationContext.configure(connection), Base.metadata)


def _tables(connection: Any) -> set[str]:
    return set(inspect(connection).get_table_names())


@pytest.mark.parametrize("kind", BACKENDS)
async def test_empty_to_head_and_models_agree(kind: str, tmp_path: Path, request) -> None:
    pg_url = request.getfixturevalue("pg_url") if kind == "postgres" else None
    async with open_test_storage(kind, tmp_path=tmp_path, pg_url=pg_url, migrate=False) as storage:
        engine = storage.engine
        assert await current_revision(engine) is None
        async with engine.connect() as conn:
            assert await conn.run_sync(_tables) == set()
        async with storage.unit_of_work():
            pass
        await upgrade_engine(engine)
        assert await current_revision(engine) == head_revision()
        async with engine.connect() as conn:
            assert await conn.run_sync(_tables) == TABLES
            assert await conn.run_sync(_diff) == []
        await upgrade_engine(engine)  # a second upgrade is a no-op
        assert await current_revision(engine) == head_revision()


def test_sync_upgrade_outside_a_loop(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    upgrade(url)
    upgrade(url)
    assert (tmp_path / "tavernbot.db").exists()


async def test_sync_upgrade_inside_a_loop_and_async_upgrade(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    upgrade(url)  # from inside this test's running loop
    probe = create_engine(url)
    try:
        assert await current_revision(probe) == head_revision()
    finally:
        await probe.dispose()
    await upgrade_async(url)
    storage = await open_storage(url)  # migrates again: nothing to do
    try:
        assert await current_revision(storage.engine) == head_revision()
    finally:
        await storage.close()


async def test_the_default_location_is_created(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    storage = await open_storage("sqlite+aiosqlite:///./data/tavernbot.db")
    try:
        assert (tmp_path / "data" / "tavernbot.db").exists()
        async with storage.engine.connect() as conn:
            pragmas = {
                name: (await conn.exec_driver_sql(f"PRAGMA {name}")).scalar()
                for name in ("journal_mode", "foreign_keys", "busy_timeout")
            }
        # busy_timeout 0: the inline driver waits for other processes' locks with asyncio
        # sleeps, never inside SQLite (tests/test_storage/test_sqlite_inline.py).
        assert pragmas == {"journal_mode": "wal", "foreign_keys": 1, "busy_timeout": 0}
    finally:
        await storage.close()


@pytest.mark.postgres
async def test_postgres_schema_isolation(pg_url: str) -> None:
    async with pg_schema(pg_url) as schema:
        await upgrade_async(pg_url, schema=schema)
        engine = create_engine(pg_url, schema=schema)
        try:
            async with engine.connect() as conn:
                assert await conn.run_sync(_tables) == TABLES
                found = (await conn.exec_driver_sql("select current_schema()")).scalar()
            assert found == schema
        finally:
            await engine.dispose()
