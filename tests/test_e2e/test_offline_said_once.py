"""Offline, the console says so once (its ``*`` line), not also as a WARNING log line on the
terminal (issue 16); ``-v`` still logs it, and ``run`` on a platform still warns."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.llm import OFFLINE_ANNOUNCEMENT
from bot.app import run
from bot.config import load_settings
from tests.conftest import ROOT
from tests.fakes.telegram.server import FakeTelegramServer
from tests.test_e2e.console import chat_env

pytestmark = pytest.mark.timeout(120)
TOKEN = "123456:" + "T" * 35


def _chat(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    env = chat_env(tmp_path / "offline.db", None)
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "bot", "chat", "--session", "quiet", *flags],
        input="hello\n/quit\n",
        capture_output=True,
        text=True,
        timeout=100,
        cwd=tmp_path,
        env=env,
        check=False,
    )


def test_the_console_says_offline_once(tmp_path: Path) -> None:
    done = _chat(tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(OFFLINE_ANNOUNCEMENT) == 1
    assert f"* no model endpoint configured: {OFFLINE_ANNOUNCEMENT}" in done.stdout
    assert OFFLINE_ANNOUNCEMENT not in done.stderr and "WARNING" not in done.stderr
    verbose = _chat(tmp_path, "-v")
    assert verbose.returncode == 0, verbose.stderr
    assert OFFLINE_ANNOUNCEMENT in verbose.stderr


async def test_run_on_a_platform_still_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with FakeTelegramServer(token=TOKEN, max_lifetime_s=50.0) as tg:
        env = chat_env(tmp_path / "run.db", None)
        env["TELEGRAM_TOKEN"] = TOKEN
        settings = load_settings(environ=env)
        settings = settings.model_copy(
            update={"telegram": settings.telegram.model_copy(update={"api_base": tg.base_url})}
        )
        task = asyncio.create_task(run(settings))
        await tg.wait_for("getUpdates", wait_s=20.0)
        os.kill(os.getpid(), signal.SIGINT)
        assert await asyncio.wait_for(task, 20.0) == 0
    said = [
        r for r in caplog.records if OFFLINE_ANNOUNCEMENT in r.getMessage() and r.levelno >= 30
    ]
    assert len(said) == 1, [r.getMessage() for r in said]
