"""Fixtures shared by every test package."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli import OWN_LOGGERS

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
# The shared SillyTavern files and conformance vectors are read where they are, never copied.
ST_FIXTURES = SHARED / "fixtures" / "st"
CONFORMANCE = SHARED / "conformance"

SLOW_FIRST = (
    "tests/test_scale/",
    "tests/test_memory_e2e/",
    "tests/test_architecture.py",
    "tests/test_e2e/",
    "tests/test_memory_storage/test_replay_storage.py",
    "tests/test_console/",
    "tests/test_bot/test_going_live.py",
    "tests/test_memory/test_roleplay_replay.py",
)
"""Where the long tests are (real processes, lease expiries, whole replays, the type check):
on parallel workers (which take whole modules, so module fixtures are set up once) their
modules are handed out first, so no worker is left with one of them at the end while the
other idles. Only the order changes; a path missing here just runs in its turn."""


def _in_worker(config: pytest.Config) -> bool:
    """True in a pytest-xdist worker (the tests then run on several processes)."""
    return hasattr(config, "workerinput")


def _rank(item: pytest.Item) -> int:
    """The item's place in ``SLOW_FIRST`` (after all of it when it is not there)."""
    found = (n for n, prefix in enumerate(SLOW_FIRST) if item.nodeid.startswith(prefix))
    return next(found, len(SLOW_FIRST))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On parallel workers the long tests' modules come first (``SLOW_FIRST``)."""
    if _in_worker(config):
        items.sort(key=_rank)  # stable: the collection order within each rank


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


@pytest.fixture(autouse=True)
def _own_log_levels() -> Iterator[None]:
    """``tavernbot``'s ``main()`` sets the levels of the project's loggers; they are put back
    after each test, so a test that calls ``main()`` in the process does not hide a later
    test's DEBUG records from ``caplog`` (on parallel workers the order of tests varies)."""
    loggers = [logging.getLogger(name) for name in OWN_LOGGERS]
    levels = [logger.level for logger in loggers]
    yield
    for logger, level in zip(loggers, levels, strict=True):
        logger.setLevel(level)
