"""``repo``: the memory repository contract runs on the in-memory fake, SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.storage.memory_repo import SqlMemoryRepository
from engine.memory.ports import MemoryRepository
from tests.fakes.memory_repo import InMemoryMemoryRepository
from tests.test_storage.support import open_test_storage

REPOSITORIES = ["fake", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=REPOSITORIES)
async def repo(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryRepository]:
    """An empty memory repository of each kind, private to the test."""
    if request.param == "fake":
        yield InMemoryMemoryRepository()
        return
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with open_test_storage(request.param, tmp_path=tmp_path, pg_url=pg_url) as storage:
        yield SqlMemoryRepository(storage.engine)
