"""Discord sharding's settings (issue 19): ``[discord] shard_count`` and ``shard_ids`` are
checked with one-line errors, become the adapter's options, pick discord.py's
``AutoShardedClient`` and decide which process publishes the commands; one runner with some of
the shards sees only their guilds through the fake gateway."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import discord
import pytest

from adapters.discord.client import ShardedTavernClient, TavernClient, build_client
from adapters.discord.options import DiscordOptions
from adapters.discord.runner import DiscordRunner
from bot.config import MAX_SHARD_COUNT, ConfigError, load_settings
from bot.platforms import discord_options
from tests.fakes.discord import FakeDiscord, Limits
from tests.test_discord.conftest import PacedService, options_for

pytestmark = pytest.mark.timeout(60)
READY_WAIT_S = 30.0
"""discord.py waits 5 s between the IDENTIFYs of one process's shards."""


def load_settings_discord(tmp_path: Path, lines: str) -> DiscordOptions:
    """The Discord options of a config file whose ``[discord]`` section has ``lines``."""
    path = tmp_path / "tavernbot.toml"
    path.write_text(f'[discord]\ntoken = "t"\n{lines}\n', encoding="utf-8")
    return discord_options(load_settings(path, environ={}).discord)


def test_the_keys_become_the_options_and_the_holder_of_shard_0_syncs(tmp_path: Path) -> None:
    first = load_settings_discord(tmp_path, "shard_count = 4\nshard_ids = [1, 0]")
    second = load_settings_discord(tmp_path, "shard_count = 4\nshard_ids = [2, 3]")
    assert (first.shard_count, first.shard_ids) == (4, (1, 0))
    assert first.sharded and first.syncs_commands
    assert second.sharded and not second.syncs_commands
    every = load_settings_discord(tmp_path, "shard_count = 2")
    assert every.sharded and every.shard_ids == () and every.syncs_commands
    plain = load_settings_discord(tmp_path, "")
    assert not plain.sharded and plain.shard_count is None and plain.syncs_commands


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("shard_count = 4\nshard_ids = [4]", "between 0 and shard_count - 1 (3)"),
        ("shard_count = 4\nshard_ids = [-1]", "between 0 and shard_count - 1 (3)"),
        ("shard_count = 4\nshard_ids = [1, 1]", "lists a shard twice"),
        ("shard_ids = [0]", "needs shard_count"),
        ("shard_count = 0", "greater than or equal to 1"),
        (f"shard_count = {MAX_SHARD_COUNT + 1}", f"less than or equal to {MAX_SHARD_COUNT}"),
    ],
)
def test_bad_shards_are_refused_in_one_line(tmp_path: Path, lines: str, message: str) -> None:
    path = tmp_path / "tavernbot.toml"
    path.write_text(f'[discord]\ntoken = "t"\n{lines}\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(path, environ={})
    text = str(caught.value)
    assert message in text and "\n" not in text
    assert "'discord.shard" in text


def test_the_largest_shard_count_is_accepted(tmp_path: Path) -> None:
    last = MAX_SHARD_COUNT - 1
    options = load_settings_discord(
        tmp_path, f"shard_count = {MAX_SHARD_COUNT}\nshard_ids = [{last}]"
    )
    assert options.shard_ids == (last,) and not options.syncs_commands


def test_the_client_is_sharded_only_when_a_count_is_given() -> None:
    service = PacedService()
    fake = FakeDiscord()  # not started: only its URLs' shape matters here
    sharded = build_client(
        DiscordRunner(service, options_for(fake, shard_count=4, shard_ids=(2, 3))),
        options_for(fake, shard_count=4, shard_ids=(2, 3)),
    )
    assert isinstance(sharded, ShardedTavernClient)
    assert isinstance(sharded, discord.AutoShardedClient)
    assert (sharded.shard_count, sharded.shard_ids) == (4, [2, 3])
    plain = build_client(DiscordRunner(service, options_for(fake)), options_for(fake))
    assert type(plain) is TavernClient and not isinstance(plain, discord.AutoShardedClient)


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    server = await FakeDiscord(limits=Limits(max_lifetime_s=55, max_requests=2_000)).start()
    yield server
    await server.stop()


async def test_a_runner_with_some_shards_sees_only_their_guilds(fake: FakeDiscord) -> None:
    on_0 = fake.add_guild("Zero", shard=(0, 2))
    on_1 = fake.add_guild("One", shard=(1, 2))
    room_0, room_1 = fake.add_channel(on_0, "rp"), fake.add_channel(on_1, "rp")
    ann, bea = fake.add_member(on_0, "Ann"), fake.add_member(on_1, "Bea")
    runner = DiscordRunner(PacedService(), options_for(fake, shard_count=2, shard_ids=(1,)))
    try:
        await runner.start()
        await runner.wait_ready(READY_WAIT_S)
        assert [g.id for g in runner.client.guilds] == [on_1.id]
        assert fake.gateway.live_shards == [1]
        assert not [c for c in fake.calls if c.path.endswith("/commands")]  # shard 0 syncs
        # Guild 0's message and a direct message (shard 0's) would come first on the same
        # connection as guild 1's, so once guild 1's arrived the others never will.
        await fake.say(room_0, ann, "on shard zero")
        await fake.say(fake.add_dm(ann), ann, "a direct message")
        await fake.say(room_1, bea, "on shard one")
        seen = await fake.wait_for(
            lambda: [m.content for m in runner.client.cached_messages],
            what="guild 1's message",
        )
        assert seen == ["on shard one"]
    finally:
        await runner.close()
    assert runner.errors == []
    assert on_0.id not in {g.id for g in runner.client.guilds}


async def test_a_runner_without_shard_ids_serves_every_shard_and_syncs(fake: FakeDiscord) -> None:
    on_0 = fake.add_guild("Zero", shard=(0, 2))
    on_1 = fake.add_guild("One", shard=(1, 2))
    runner = DiscordRunner(PacedService(), options_for(fake, shard_count=2))
    try:
        await runner.start()
        await runner.wait_ready(READY_WAIT_S)
        assert sorted(g.id for g in runner.client.guilds) == sorted([on_0.id, on_1.id])
        assert fake.gateway.live_shards == [0, 1]
        assert [c.method for c in fake.calls if c.path.endswith("/commands")] == ["PUT"]
    finally:
        await runner.close()
    assert runner.errors == []
