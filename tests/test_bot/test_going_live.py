"""Going live (issue 16): the config file is honoured like its environment variables, each
value's source is named, and the database lives in one place (the user's data directory).

Driven through the real CLI, in a temporary working directory holding a ``tavernbot.toml``
copied from ``config.example.toml`` with only ``base_url`` and ``model`` changed, against the
loopback fake OpenAI server."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from bot.cli import main
from bot.config import load_settings
from tests.conftest import ROOT
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_e2e.console import ConsoleProcess

CLI_TIMEOUT_S = 60.0
"""How long one CLI subprocess may run before the test fails."""
DEAD_URL = "http://127.0.0.1:9/v1"
"""An endpoint nothing answers on (the discard port)."""


def write_config(directory: Path, base_url: str) -> Path:
    """``config.example.toml`` as a new user would copy it: ``base_url`` uncommented and
    ``model`` set, nothing else changed."""
    text = (ROOT / "config.example.toml").read_text(encoding="utf-8")
    commented = '# base_url = "http://127.0.0.1:11434/v1"\n'
    assert commented in text
    text = text.replace(commented, f'base_url = "{base_url}"\n')
    text = text.replace('model = "gpt-4o-mini"\n', 'model = "fake-model"\n')
    path = directory / "tavernbot.toml"
    path.write_text(text, encoding="utf-8")
    return path


def clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without any model, platform or database variable."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LLM_", "DISCORD", "TELE", "DATABASE_", "TAVERNBOT_"))
    }
    return {**env, "PYTHONPATH": str(ROOT), **extra}


async def run_cli(cwd: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    """Run ``tavernbot ARGS`` as a subprocess; (exit code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    out, err = await asyncio.wait_for(proc.communicate(), CLI_TIMEOUT_S)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_chat_streams_from_the_endpoint_named_in_the_config_file(tmp_path: Path) -> None:
    async with FakeOpenAIServer(max_requests=20) as fake:
        write_config(tmp_path, fake.base_url)
        fake.script(FakeReply(text="The lantern flickers, and the innkeeper nods."))
        console = await ConsoleProcess.start(
            clean_env(DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'chat.db'}"), cwd=tmp_path
        )
        try:
            reply = await console.ask("Hello?", kinds=("reply", "error"))
        finally:
            assert await console.close() == 0
    assert reply["type"] == "reply"
    assert reply["text"] == "The lantern flickers, and the innkeeper nods."
    narrator = [r for r in fake.chat_requests if r.body.get("model") == "fake-model"]
    assert narrator and narrator[0].body["stream"] is True
    assert not any("offline" in str(line.get("message", "")) for line in console.lines)


async def test_doctor_names_the_file_then_the_environment_as_the_source(tmp_path: Path) -> None:
    async with FakeOpenAIServer(max_requests=20) as fake:
        db = f"sqlite+aiosqlite:///{tmp_path / 'doctor.db'}"
        write_config(tmp_path, fake.base_url)
        code, out, _ = await run_cli(tmp_path, clean_env(DATABASE_URL=db), "doctor")
        model = next(line for line in out.splitlines() if " model: " in line)
        assert model.startswith("ok ") and "serves fake-model" in model
        assert "base_url from tavernbot.toml" in model and "model from tavernbot.toml" in model
        assert "loaded (tavernbot.toml)" in out
        # The file now points nowhere; the variable wins and is named.
        write_config(tmp_path, DEAD_URL)
        env = clean_env(DATABASE_URL=db, LLM_BASE_URL=fake.base_url)
        code, out, _ = await run_cli(tmp_path, env, "doctor")
    model = next(line for line in out.splitlines() if " model: " in line)
    assert model.startswith("ok ") and "serves fake-model" in model
    assert "base_url from environment variable LLM_BASE_URL" in model
    assert "model from tavernbot.toml" in model


def test_config_check_names_file_environment_and_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("LLM_BASE_URL", "LLM_MODEL", "LLM_API_KEY", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    write_config(tmp_path, "http://127.0.0.1:8000/v1")
    assert main(["config", "check"]) == 0
    out = capsys.readouterr().out
    assert "config file: tavernbot.toml" in out
    assert "model: fake-model at http://127.0.0.1:8000/v1" in out
    assert "base_url from tavernbot.toml, model from tavernbot.toml" in out
    assert "(from default)" in out  # the database
    monkeypatch.setenv("LLM_BASE_URL", "http://127.0.0.1:8001/v1")
    monkeypatch.setenv("LLM_MODEL", "other-model")
    assert main(["config", "check"]) == 0
    out = capsys.readouterr().out
    assert "model: other-model at http://127.0.0.1:8001/v1" in out
    assert "base_url from environment variable LLM_BASE_URL" in out
    assert "model from environment variable LLM_MODEL" in out


def test_a_file_base_url_and_the_variable_mean_the_same(tmp_path: Path) -> None:
    from_file = load_settings(write_config(tmp_path, "http://127.0.0.1:8000/v1"), environ={})
    path = tmp_path / "empty.toml"
    path.write_text("")
    from_env = load_settings(path, environ={"LLM_BASE_URL": "http://127.0.0.1:8000/v1"})
    for settings in (from_file, from_env):
        assert settings.llm.provider == "openai" and not settings.uses_offline_model
        assert settings.llm.base_url == "http://127.0.0.1:8000/v1"
    assert from_file.source("llm", "base_url") == str(tmp_path / "tavernbot.toml")
    assert from_env.source("llm", "base_url") == "environment variable LLM_BASE_URL"
    assert from_env.source("llm", "model") == "default"


def test_an_explicit_offline_provider_is_named_where_it_was_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    path = tmp_path / "offline.toml"
    path.write_text('[llm]\nprovider = "offline"\nbase_url = "http://127.0.0.1:8000/v1"\n')
    assert main(["--config", str(path), "config", "check"]) == 0
    assert f"model: offline provider (provider = 'offline' from {path})" in capsys.readouterr().out


async def test_the_default_database_is_in_the_user_data_dir_and_named(tmp_path: Path) -> None:
    data_home = tmp_path / "xdg"
    work = tmp_path / "work"
    work.mkdir()
    env = clean_env(XDG_DATA_HOME=str(data_home))
    expected = data_home / "tavernbot" / "tavernbot.db"
    for command in (["chat", "--jsonl"], ["run"]):
        code, _, err = await run_cli(work, env, *command)
        assert code == 0, err
        assert f"tavernbot: database {expected}\n" in err
    assert expected.is_file()
    assert list(work.iterdir()) == []  # nothing written in the working directory
    code, out, _ = await run_cli(work, env, "doctor")
    assert f"ok    database location: {expected} (from default)\n" in out


async def test_an_explicit_database_url_wins_and_is_named(tmp_path: Path) -> None:
    data_home = tmp_path / "xdg"
    chosen = tmp_path / "mine.db"
    env = clean_env(XDG_DATA_HOME=str(data_home), DATABASE_URL=f"sqlite+aiosqlite:///{chosen}")
    code, _, err = await run_cli(tmp_path, env, "chat", "--jsonl")
    assert code == 0, err
    assert f"tavernbot: database {chosen}\n" in err
    assert chosen.is_file() and not data_home.exists()
    code, out, _ = await run_cli(tmp_path, env, "doctor")
    assert f"database location: {chosen} (from environment variable DATABASE_URL)" in out
    config = tmp_path / "tavernbot.toml"
    config.write_text(f'[database]\nurl = "sqlite+aiosqlite:///{chosen}"\n')
    del env["DATABASE_URL"]
    code, out, _ = await run_cli(tmp_path, env, "doctor")
    assert f"database location: {chosen} (from tavernbot.toml)" in out
    assert not data_home.exists()


CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Mira",
        "description": "{{char}} keeps the inn.",
        "personality": "",
        "scenario": "",
        "first_mes": "Welcome to the inn, {{user}}.",
        "mes_example": "",
    },
}


def console_config(directory: Path, character: str) -> Path:
    """A config whose ``[console]`` names a session, a user and a character card."""
    path = directory / "tavernbot.toml"
    path.write_text(
        f'[console]\nsession = "tavern"\nuser = "Ann"\ncharacter = "{character}"\n',
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("command", ["chat", "run"])
async def test_run_and_chat_play_the_console_section(tmp_path: Path, command: str) -> None:
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards" / "mira.json").write_text(json.dumps(CARD), encoding="utf-8")
    console_config(tmp_path, "cards/mira.json")
    work = tmp_path / "elsewhere"
    work.mkdir()  # the card path is taken from the config file's directory
    env = clean_env(DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}")
    args = ["--config", str(tmp_path / "tavernbot.toml"), command]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        *(["--jsonl"] if command == "chat" else []),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=work,
    )
    out, err = await asyncio.wait_for(proc.communicate(b"/info\n"), CLI_TIMEOUT_S)
    assert proc.returncode == 0, err.decode()
    text = out.decode()
    assert "Welcome to the inn, Ann." in text
    assert "session tavern: character Mira" in text


@pytest.mark.parametrize("command", ["chat", "run"])
async def test_a_missing_console_character_is_one_line_exit_2(
    tmp_path: Path, command: str
) -> None:
    config = console_config(tmp_path, "cards/nobody.png")
    env = clean_env(DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}")
    code, out, err = await run_cli(tmp_path, env, "--config", str(config), command)
    assert code == 2
    assert err.count("\n") == 1, err  # one line, before anything else is opened
    line = err.strip()
    assert "[console] character" in line and str(tmp_path / "cards" / "nobody.png") in line
    assert str(config) in line and "Traceback" not in err
    assert not (tmp_path / "c.db").exists()  # stopped before the database was opened


async def test_chat_says_at_start_which_endpoint_answers_and_why(tmp_path: Path) -> None:
    async with FakeOpenAIServer(max_requests=5) as fake:
        write_config(tmp_path, fake.base_url)
        env = clean_env(DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'start.db'}")
        code, out, err = await run_cli(tmp_path, env, "chat", "--jsonl")
    assert code == 0, err
    assert f"tavernbot: model fake-model at {fake.base_url} (base_url from " in err
    assert "tavernbot.toml, model from" in err and "offline" not in err + out
