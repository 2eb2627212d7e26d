"""Configuration errors never echo a secret and name where the bad value came from: the file
and key, or the environment variable (through the CLI: exit 2, one line on stderr)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main

SECRET = "sk-live-0123456789abcdef"


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main([*args, "config", "check"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert captured.out == ""
    return lines[0]


def test_a_misspelt_key_is_named_but_its_value_is_not_echoed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("LLM_BASE_URL", "LLM_API_KEY", "DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    path = tmp_path / "tavernbot.toml"
    path.write_text(f'[llm]\napikey = "{SECRET}"\n')
    line = _run(capsys, "--config", str(path))
    assert str(path) in line and "unknown key 'llm.apikey'" in line
    assert SECRET not in line


def test_a_bad_database_url_from_the_environment_names_the_variable_and_hides_credentials(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)  # no tavernbot.toml here: only the environment speaks
    monkeypatch.setenv("DATABASE_URL", "postgres://admin:hunter2@db.example:5432/tavern")
    line = _run(capsys)
    assert "environment variable DATABASE_URL" in line and "'database.url'" in line
    assert "hunter2" not in line and "admin" not in line
    assert "db.example:5432/tavern" in line  # still says which database was meant
    assert "defaults" not in line


def test_a_bad_value_in_a_secret_looking_setting_is_hidden(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TAVERNBOT_SECRET_KEY", raising=False)
    path = tmp_path / "tavernbot.toml"
    path.write_text(f'[telegram]\nwebhook_secret = ["{SECRET}"]\n')
    line = _run(capsys, "--config", str(path))
    assert "telegram.webhook_secret" in line and SECRET not in line
