"""``tavernbot doctor`` and ``tavernbot run`` (console mode) in-process."""

from __future__ import annotations

import argparse
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.app import Application, run
from bot.cli_commands.doctor import Report, check
from bot.config import load_settings
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram.server import FakeTelegramServer
from tests.test_e2e.console import chat_env

pytestmark = pytest.mark.timeout(60)
GOOD_TELEGRAM = "123456:" + "A" * 35


async def test_doctor_says_what_is_wrong(tmp_path: Path) -> None:
    async with FakeOpenAIServer(max_requests=5, lifetime_s=50.0) as fake:
        env = chat_env(tmp_path / "d.db", fake.base_url)
        env["TELEGRAM_TOKEN"] = "not a token"
        env["LLM_MODEL"] = "missing-model"
        out = io.StringIO()
        code = await check(load_settings(environ=env), Report(out))
    text = out.getvalue()
    assert code == 1
    assert "FAIL  telegram token" in text
    assert "does not list 'missing-model'" in text and "fake-model" in text
    assert "warn  database" in text and "empty" in text


async def test_doctor_passes_a_good_setup(tmp_path: Path) -> None:
    async with (
        FakeOpenAIServer(max_requests=5, lifetime_s=50.0) as fake,
        FakeTelegramServer(token=GOOD_TELEGRAM, max_lifetime_s=50.0) as tg,
    ):
        env = chat_env(tmp_path / "d.db", fake.base_url)
        env["TELEGRAM_TOKEN"] = GOOD_TELEGRAM
        env["TAVERNBOT_SECRET_KEY"] = "a long secret"
        settings = load_settings(environ=env)
        # doctor asks the Bot API (here the loopback fake) whether it takes the token
        telegram = settings.telegram.model_copy(update={"api_base": tg.base_url})
        settings = settings.model_copy(update={"telegram": telegram})
        async with Application(settings):
            pass  # creates and migrates the database
        out = io.StringIO()
        code = await check(settings, Report(out))
    assert code == 0, out.getvalue()
    assert "ok    model" in out.getvalue()


async def test_doctor_reports_an_unreachable_or_refusing_endpoint(tmp_path: Path) -> None:
    async with FakeOpenAIServer(max_requests=5, lifetime_s=50.0) as fake:
        url = fake.base_url
    out = io.StringIO()
    code = await check(load_settings(environ=chat_env(tmp_path / "d.db", url)), Report(out))
    assert code == 1 and "cannot reach" in out.getvalue()


def test_doctor_reports_a_bad_config_file(tmp_path: Path) -> None:
    from bot.cli_commands.doctor import _doctor

    bad = tmp_path / "bad.toml"
    bad.write_text("[llm]\nprovider = 'nope'\n")
    out = io.StringIO()
    assert _doctor(argparse.Namespace(config=bad), out) == 1
    assert "FAIL  config" in out.getvalue() and "provider" in out.getvalue()


async def _script(lines: list[str]) -> AsyncIterator[str]:
    for line in lines:
        yield line


async def test_run_without_platforms_plays_the_console(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = load_settings(environ=chat_env(tmp_path / "r.db", None))
    code = await run(settings, lines=lambda: _script(["hello", "/quit"]))
    assert code == 0
    printed = capsys.readouterr().out
    assert "offline" in printed and "You said: hello" in printed and "[main #1]" in printed
