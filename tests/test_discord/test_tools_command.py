"""``/session tools``: members see what the model's tools may write; only the game master lets
them write global variables (issue 12)."""

from __future__ import annotations

from adapters.discord.convert import session_key
from tests.fakes.discord import FakeDiscord
from tests.test_discord.conftest import PacedService, Starter, World, bind


async def test_only_the_game_master_allows_global_tool_writes(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    key = session_key(world.guild.id, world.rp.id)

    shown = await fake.slash(world.rp, world.alice, "session tools")
    assert shown.ephemeral and "global: refused" in shown.text
    refused = await fake.slash(world.rp, world.alice, "session tools", global_writes=True)
    assert "Game Master" in refused.text and refused.ephemeral
    assert not await service.tools_global_writes(key)
    assert not [c for c in service.calls if c[0] == "set_tools_global_writes"]

    made = await fake.slash(world.rp, world.gm, "session tools", global_writes=True)
    assert made.text.startswith("Set.") and "chat and global variables" in made.text
    assert await service.tools_global_writes(key)
    await fake.slash(world.rp, world.gm, "session tools", global_writes=False)
    assert not await service.tools_global_writes(key)
