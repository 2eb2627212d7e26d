"""The bot connects to the fake through real discord.py: handshake, commands, guild cache."""

from __future__ import annotations

from tests.fakes.discord import FakeDiscord
from tests.test_discord.conftest import Starter, World


async def test_startup_handshake_syncs_commands_and_sees_guilds(
    fake: FakeDiscord, world: World, start_bot: Starter
) -> None:
    runner = await start_bot()
    assert fake.gateway.identifies == 1
    identify = next(d for op, d in fake.gateway_log if op == 2)
    assert identify["intents"] & (1 << 15), "MESSAGE_CONTENT intent is requested"
    names = {c["name"] for c in fake.commands[None]}
    assert {"tavern", "vars", "session", "Branch from here"} <= names
    assert {g.id for g in runner.client.guilds} == {world.guild.id, world.guild2.id}
    assert runner.client.get_channel(world.rp.id) is not None
