"""Fixtures of the storage-backed test packages (re-exported by test_timeline and
test_variables): ``storage`` runs each test on SQLite and on PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.storage import SqlStorage
from tests.test_storage.support import open_test_storage

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqlStorage]:
    """A migrated, empty database of each backend, private to the test."""
    kind = request.param
    pg_url = request.getfixturevalue("pg_url") if kind == "postgres" else None
    async with open_test_storage(kind, tmp_path=tmp_path, pg_url=pg_url) as opened:
        yield opened
