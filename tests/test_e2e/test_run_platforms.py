"""``tavernbot run`` with Telegram or Discord configured: the platform starts on the shared
engine and database, answers through the fake platform API, and SIGINT stops it cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from bot.app import run
from bot.config import load_settings
from tests.fakes.discord import FakeDiscord, Limits
from tests.fakes.telegram.server import FakeTelegramServer
from tests.test_discord.conftest import build_world
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


async def test_run_serves_discord_on_the_real_engine(tmp_path: Path) -> None:
    fake = await FakeDiscord(limits=Limits(max_lifetime_s=50, max_requests=2_000)).start()
    try:
        world = build_world(fake)
        env = chat_env(tmp_path / "discord.db", None)
        env["DISCORD_TOKEN"] = fake.token
        settings = load_settings(environ=env)
        discord = settings.discord.model_copy(
            update={
                "api_base": fake.api_base,
                "gateway_url": fake.gateway_url,
                "reply_policy": "every_message",
                "channels": {str(world.rp.id): "Aqua"},
            }
        )
        task = asyncio.create_task(run(settings.model_copy(update={"discord": discord})))
        await fake.gateway.wait_ready(20.0)
        # the configured channel is bound in on_ready, which discord.py fires once the
        # guilds have arrived (after its guild_ready_timeout of 2 s)
        await asyncio.sleep(3.0)
        await fake.say(world.rp, world.alice, "hi there")
        sent = await fake.wait_for(
            lambda: [m for m in fake.sent_in(world.rp) if "You said: hi there" in m["content"]],
            what="the engine's reply",
            wait_s=20.0,
        )
        assert sent[0]["author"]["username"] == "Aqua"
        os.kill(os.getpid(), signal.SIGINT)
        assert await asyncio.wait_for(task, 20.0) == 0
    finally:
        await fake.stop()
