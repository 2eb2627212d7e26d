"""Fixtures shared by every test package."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
# The shared SillyTavern files and conformance vectors are read where they are, never copied.
ST_FIXTURES = SHARED / "fixtures" / "st"
CONFORMANCE = SHARED / "conformance"


@pytest.fixture
def pg_url() -> str:
    """The PostgreSQL URL for storage tests; fails (never skips) in CI when it is missing."""
    url = os.environ.get("TAVERNBOT_TEST_PG_URL")
    if not url:
        if os.environ.get("CI"):
            pytest.fail("TAVERNBOT_TEST_PG_URL is not set; .ci/run sets it")
        url = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"
    return url


@pytest.fixture(autouse=True)
def _user_data_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Every test gets its own user data directory (where the default database lives, through
    ``platformdirs``), so nothing is written under the real home and no two tests share a
    default database; subprocesses inherit it through the environment."""
    path = tmp_path_factory.mktemp("xdg-data")
    monkeypatch.setenv("XDG_DATA_HOME", str(path))
    return path
