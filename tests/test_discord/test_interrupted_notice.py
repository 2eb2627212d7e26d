"""A Discord channel is told once that its reply was interrupted (issue 19): a floor left
``generating`` by a process whose lease expired is failed by a live process's sweep, and the
channel gets one notice (🔄 on it retries the floor); a floor whose owner's lease stands gets
none, and a process not serving the guild's shard posts nothing (direct messages belong to
shard 0's process).

Real discord.py against the loopback fake Discord, the real engine on an SQLite file.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from adapters.discord.interrupted import (
    INTERRUPTED_NOTICE,
    SHARD_ID_SHIFT,
    serves,
    shard_of,
    tell_interrupted,
)
from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_discord.conftest import World
from tests.test_discord.real_engine import (
    Engine,
    RealStarter,
    key_of,
    reply_text,
    start_playing,
    webhook_replies,
)
from tests.test_scale.interrupted_support import generating, generating_ids, lease, sweeper

pytestmark = pytest.mark.timeout(60)


def notices(fake: FakeDiscord, channel_id: int) -> list[dict[str, Any]]:
    """The interrupted-reply notices posted in a channel."""
    return [
        m
        for m in fake.messages.values()
        if m["channel_id"] == str(channel_id) and m["content"] == INTERRUPTED_NOTICE
    ]


async def test_the_channel_of_a_dead_owner_floor_is_told_once_and_retries(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    runner = await start_playing(fake, world, start_real)
    storage = engine.storage
    assert storage is not None
    now = datetime.now(UTC)
    await lease(storage, "dead-owner", renewed_at=now - timedelta(hours=1))
    said_by = str(world.alice.id)
    await generating(storage, key_of(world), "Are you there?", owner="dead-owner", speaker=said_by)

    first, first_notices = sweeper(storage, "discord", runner.tell_interrupted)
    second, second_notices = sweeper(storage, "discord", runner.tell_interrupted)
    runs = [asyncio.create_task(n.run()) for n in (first_notices, second_notices)]
    try:
        failed = await asyncio.gather(first.sweep(), second.sweep())
        assert sorted(len(f) for f in failed) == [0, 1]  # the compare-and-set chose one
        await fake.wait_for(lambda: notices(fake, world.rp.id), what="the notice")
        assert await first.sweep() == [] and await second.sweep() == []
        await fake.wait_idle(quiet=0.3)
    finally:
        for task in runs:
            task.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
    (notice,) = notices(fake, world.rp.id)
    assert webhook_replies(fake, world.rp.id) == []  # nothing else was said in the channel
    view = (await engine.svc.history(key_of(world), "main"))[-1]
    assert view.failed and "Are you there?" in view.text

    # 🔄 on the notice retries the floor: the reply comes once, in the character's voice (a
    # webhook message after the bot's notice, which stays as it was).
    model.script(reply_text("Still here, sorry."))
    await fake.react(notice, world.alice, "🔄")
    await fake.wait_for(lambda: webhook_replies(fake, world.rp.id), what="the retried reply")
    await fake.wait_idle(quiet=0.3)
    assert [m["content"] for m in webhook_replies(fake, world.rp.id)] == ["Still here, sorry."]
    assert fake.messages[int(notice["id"])]["content"] == INTERRUPTED_NOTICE
    view = (await engine.svc.history(key_of(world), "main"))[-1]
    assert (view.floor, view.failed, view.text) == (1, False, "Still here, sorry.")


async def test_a_live_owner_floor_and_another_shards_guild_get_no_notice(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
) -> None:
    runner = await start_playing(fake, world, start_real)
    storage = engine.storage
    assert storage is not None
    await lease(storage, "live-owner", renewed_at=datetime.now(UTC))
    live = await generating(storage, key_of(world), "Still coming", owner="live-owner")
    service, _ = sweeper(storage, "discord", runner.tell_interrupted)
    assert await service.sweep() == []
    assert live in await generating_ids(storage)

    # A process serving only the other of two shards leaves the guild's channel alone.
    here = shard_of(str(world.guild.id), 2)
    elsewhere = replace(runner.options, shard_count=2, shard_ids=(1 - here,))
    told = await tell_interrupted(
        runner.client,
        engine.svc,
        runner.turns,
        elsewhere,
        key=key_of(world),
        branch="main",
        floor=1,
    )
    assert told is False
    await fake.wait_idle(quiet=0.3)
    assert notices(fake, world.rp.id) == []


def test_the_shard_of_a_guild_and_of_direct_messages() -> None:
    guild = (3 << SHARD_ID_SHIFT) | 12345  # a snowflake whose shard of 4 is 3
    assert shard_of(str(guild), 4) == 3 and shard_of("dm:42", 4) == 0
    options = replace(_options(), shard_count=4, shard_ids=(2, 3))
    assert serves(options, str(guild)) and not serves(options, "dm:42")
    assert serves(replace(options, shard_ids=(0,)), "dm:42")
    assert serves(replace(options, shard_count=None, shard_ids=()), "dm:42")


def _options() -> Any:
    from adapters.discord.options import DiscordOptions

    return DiscordOptions(token="x")
