"""The bot connects to the fake through real discord.py: handshake, commands, guild cache."""

from __future__ import annotations

from tests.fakes.discord import FakeDiscord, Limits
from tests.test_discord.conftest import (
    PacedService,
    Starter,
    World,
    bind,
    build_world,
    options_for,
)


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


async def test_zlib_stream_transport_carries_a_conversation(service: PacedService) -> None:
    from adapters.discord.runner import DiscordRunner

    fake = await FakeDiscord(allow_compression=True, limits=Limits(max_lifetime_s=30)).start()
    runner = None
    try:
        world = build_world(fake)
        runner = DiscordRunner(service, options_for(fake))
        await runner.start()
        await runner.wait_ready(5)
        await bind(world)
        await fake.say(world.rp, world.alice, "compressed?")
        await fake.wait_for(
            lambda: [m for m in fake.sent_in(world.rp) if m["content"].endswith("compressed?")]
        )
    finally:
        if runner is not None:
            await runner.close()
        await fake.stop()
    assert runner.errors == []


async def test_fake_refuses_commands_that_were_never_synced(
    fake: FakeDiscord, world: World, start_bot: Starter
) -> None:
    import pytest

    from tests.fakes.discord import CommandNotSynced

    await start_bot()
    with pytest.raises(CommandNotSynced, match="never synced"):
        await fake.slash(world.rp, world.alice, "teleport")
    with pytest.raises(CommandNotSynced, match="no sub-command"):
        await fake.slash(world.rp, world.alice, "vars teleport")


async def test_vars_scope_option_offers_the_engines_five_scopes(
    fake: FakeDiscord, world: World, start_bot: Starter
) -> None:
    from engine.variables.values import SCOPES

    await start_bot()
    vars_group = next(c for c in fake.commands[None] if c["name"] == "vars")
    offered = {
        sub["name"]: [c["value"] for c in option["choices"]]
        for sub in vars_group["options"]
        for option in sub.get("options", [])
        if option["name"] == "scope"
    }
    assert offered == {name: list(SCOPES) for name in ("list", "get", "set", "delete")}
