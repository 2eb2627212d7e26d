"""Running ``tavernbot import``/``export`` in-process against a temporary SQLite database."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from tests.conftest import ST_FIXTURES

ST_FILES = ST_FIXTURES
KIND_BY_PREFIX = {"card_": "card", "preset_": "preset", "worldinfo_": "worldbook", "chat_": "chat"}
REGEX_SCRIPT = {
    "id": "a1b2",
    "scriptName": "Trim stars",
    "findRegex": "/\\*+/g",
    "replaceString": "",
    "trimStrings": [],
    "placement": [2],
    "disabled": False,
    "markdownOnly": True,
    "promptOnly": False,
    "runOnEdit": True,
    "substituteRegex": 0,
    "minDepth": None,
    "maxDepth": None,
}


def st_fixtures() -> list[tuple[str, Path]]:
    """Every SillyTavern file in the shared fixtures with the kind it is imported as."""
    found = []
    for path in sorted(ST_FILES.iterdir()):
        for prefix, kind in KIND_BY_PREFIX.items():
            if path.name.startswith(prefix):
                found.append((kind, path))
    return found


class Cli:
    """``tavernbot`` against one database file inside a temporary directory."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
        self.dir = tmp_path
        self.db = tmp_path / "tavernbot.db"
        self._capsys = capsys
        monkeypatch.chdir(tmp_path)  # no tavernbot.toml from elsewhere
        monkeypatch.setenv("DATABASE_URL", f"sqlite+aiosqlite:///{self.db}")
        for name in (
            "LLM_BASE_URL",
            "LLM_API_KEY",
            "LLM_MODEL",
            "DISCORD_TOKEN",
            "TELEGRAM_TOKEN",
        ):
            monkeypatch.delenv(name, raising=False)

    def __call__(self, *args: str | Path) -> tuple[int, str, str]:
        """Run one command; returns (exit code, stdout, stderr)."""
        self._capsys.readouterr()
        code = main([str(a) for a in args])
        captured = self._capsys.readouterr()
        return code, captured.out, captured.err

    def ok(self, *args: str | Path) -> str:
        """Run a command that must succeed; returns its stdout."""
        code, out, err = self(*args)
        assert code == 0, err
        return out

    def dump(self) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of every table (to prove that a failed command wrote nothing)."""
        if not self.db.exists():
            return {}
        with sqlite3.connect(self.db) as conn:
            tables = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            return {
                t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr)
                for t in tables
            }

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """The rows of one query."""
        with sqlite3.connect(self.db) as conn:
            return conn.execute(sql).fetchall()


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> Cli:
    return Cli(tmp_path, monkeypatch, capsys)
