"""The memory migration goes down and up again, leaving the other tables alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import inspect

from adapters.storage.migrate import alembic_config, current_revision, head_revision
from tests.test_storage.support import open_test_storage

MEMORY_TABLES = {"memory_record", "memory_relation", "memory_job"}
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def _run(connection: Any, action: str, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    getattr(command, action)(config, revision)


def _tables(connection: Any) -> set[str]:
    return set(inspect(connection).get_table_names())


@pytest.mark.parametrize("kind", BACKENDS)
async def test_memory_tables_downgrade_and_upgrade(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    pg_url = request.getfixturevalue("pg_url") if kind == "postgres" else None
    async with open_test_storage(kind, tmp_path=tmp_path, pg_url=pg_url) as storage:
        async with storage.engine.begin() as conn:
            assert await conn.run_sync(_tables) >= MEMORY_TABLES
            await conn.run_sync(_run, "downgrade", "0001")
        async with storage.engine.begin() as conn:
            left = await conn.run_sync(_tables)
        assert not MEMORY_TABLES & left and {"session", "floor"} <= left
        async with storage.engine.begin() as conn:
            await conn.run_sync(_run, "upgrade", "head")
        assert await current_revision(storage.engine) == head_revision()
        async with storage.engine.begin() as conn:
            assert await conn.run_sync(_tables) >= MEMORY_TABLES
