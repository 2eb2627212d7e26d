"""Nothing leaks to a Discord channel: the public "no reply" notice of an unexpected failure
carries only an error id (the details are in the log under that id), and a model URL's
credentials are never posted."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from adapters.llm.openai_model import OpenAIChatModel
from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import FakeError, FakeOpenAIServer
from tests.test_discord.conftest import World
from tests.test_discord.real_engine import Engine, RealStarter, start_playing

SECRET = "my very private words"
RAW = f"(asyncpg.Error) [SQL: INSERT INTO message (raw) VALUES ($1)] [parameters: ('{SECRET}',)]"
SAFE = re.compile(r"^\*\(no reply: the turn failed \(error ([0-9a-f]{6})\)\)\*$")


def channel_texts(fake: FakeDiscord, channel_id: int) -> list[str]:
    where = str(channel_id)
    return [str(m["content"]) for m in fake.messages.values() if m["channel_id"] == where]


async def notice(fake: FakeDiscord, world: World) -> str:
    found = await fake.wait_for(
        lambda: [t for t in channel_texts(fake, world.rp.id) if "no reply" in t],
        what="failure notice",
    )
    return str(found[0])


async def test_an_unexpected_failure_is_posted_as_an_error_id_only(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def broken(self: OpenAIChatModel, request: Any) -> Any:
        raise RuntimeError(RAW)

    await start_playing(fake, world, start_real)
    monkeypatch.setattr(OpenAIChatModel, "stream", broken)
    with caplog.at_level(logging.ERROR):
        await fake.say(world.rp, world.alice, f"hello, {SECRET}")
        shown = await notice(fake, world)
    found = SAFE.match(shown)
    assert found, shown
    texts = channel_texts(fake, world.rp.id)
    assert all("SQL" not in t and "parameters" not in t for t in texts)
    logged = [r for r in caplog.records if found.group(1) in r.getMessage()]
    assert logged and "INSERT INTO message" in logged[0].getMessage()


async def test_model_url_credentials_are_never_posted(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plain = model.base_url
    with_password = plain.replace("http://", "http://alice:pw-hunter2@")
    monkeypatch.setattr(FakeOpenAIServer, "base_url", property(lambda self: with_password))
    await engine.close()
    await engine.open()  # the engine's profile now carries the password in its URL
    await start_playing(fake, world, start_real)
    model.script(FakeError(status=500, message="down for maintenance"))
    await fake.say(world.rp, world.alice, "hello")
    shown = await notice(fake, world)
    assert "down for maintenance" in shown
    assert all("hunter2" not in t and "alice:" not in t for t in channel_texts(fake, world.rp.id))
