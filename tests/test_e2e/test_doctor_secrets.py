"""``tavernbot doctor`` and ``config check`` show the model and database URLs without their
credentials (userinfo and secret query parameters), and never the API key."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from bot.cli import main
from bot.cli_commands.doctor import Report, check
from bot.config import load_settings
from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_e2e.console import chat_env

pytestmark = pytest.mark.timeout(60)
SECRETS = ("pw-hunter2", "alice", "q-secret-77", "sk-e2e")


async def test_doctor_shows_the_endpoint_without_credentials(tmp_path: Path) -> None:
    async with FakeOpenAIServer(max_requests=5, lifetime_s=50.0) as fake:
        host = fake.base_url.removeprefix("http://")
        env = chat_env(tmp_path / "d.db", f"http://alice:pw-hunter2@{host}")
        out = io.StringIO()
        await check(load_settings(environ=env), Report(out))
        env["LLM_BASE_URL"] = f"{fake.base_url}?key=q-secret-77"
        await check(load_settings(environ=env), Report(out))
    text = out.getvalue()
    assert text.count(f"{host.removesuffix('/v1')}/v1") >= 2, text  # both endpoints named
    for secret in SECRETS:
        assert secret not in text, text


def test_config_check_shows_urls_without_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    env = chat_env(tmp_path / "d.db", "http://alice:pw-hunter2@127.0.0.1:9/v1?key=q-secret-77")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    assert main(["config", "check"]) == 0
    shown = capsys.readouterr().out
    assert "127.0.0.1:9/v1" in shown
    for secret in SECRETS:
        assert secret not in shown, shown
