"""``tavernbot db upgrade`` migrates the configured database."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adapters.storage import create_engine
from adapters.storage.migrate import current_revision, head_revision
from bot.cli import main


def _revision(url: str) -> str | None:
    async def read() -> str | None:
        engine = create_engine(url)
        try:
            return await current_revision(engine)
        finally:
            await engine.dispose()

    return asyncio.run(read())


def test_db_upgrade_migrates_the_configured_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'sub' / 'bot.db'}"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.chdir(tmp_path)
    assert main(["db", "upgrade"]) == 0
    assert "created the database at" in capsys.readouterr().out
    assert _revision(url) == head_revision()
    assert main(["db", "upgrade"]) == 0  # nothing left to do
    assert "up to date" in capsys.readouterr().out


def test_db_upgrade_with_a_bad_url_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", "mysql://nope")
    monkeypatch.chdir(tmp_path)
    assert main(["db", "upgrade"]) == 2
