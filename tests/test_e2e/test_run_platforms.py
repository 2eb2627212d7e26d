"""``tavernbot run`` with Telegram configured: the platform starts on the shared engine and
database, answers a private message through the fake Bot API, and SIGINT stops it cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from bot.app import run
from bot.config import load_settings
from tests.fakes.telegram.server import FakeTelegramServer
from tests.test_e2e.console import chat_env

pytestmark = pytest.mark.timeout(60)
TOKEN = "123456:" + "T" * 35


async def test_run_serves_telegram_until_sigint(tmp_path: Path) -> None:
    async with FakeTelegramServer(token=TOKEN, max_lifetime_s=50.0) as tg:
        env = chat_env(tmp_path / "run.db", None)
        env["TELEGRAM_TOKEN"] = TOKEN
        settings = load_settings(environ=env)
        settings = settings.model_copy(
            update={"telegram": settings.telegram.model_copy(update={"api_base": tg.base_url})}
        )
        task = asyncio.create_task(run(settings))
        await tg.wait_for("getUpdates", wait_s=20.0)
        ann = tg.new_user("Ann")
        chat = tg.private_chat(ann)
        await tg.send_text(chat, ann, "/start")
        await tg.send_text(chat, ann, "hello from telegram")
        await tg.wait_until(
            lambda: any(
                "You said: hello from telegram" in (m.text or "")
                for m in tg.bot_messages(chat["id"])
            ),
            wait_s=20.0,
        )
        os.kill(os.getpid(), signal.SIGINT)
        assert await asyncio.wait_for(task, 20.0) == 0
