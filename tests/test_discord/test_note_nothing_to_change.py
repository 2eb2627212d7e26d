"""Discord ``/session note depth:2`` with no note: says there is none to change, stores
nothing."""

from __future__ import annotations

from adapters.discord.convert import session_key
from engine.turns.notes import NO_NOTE_TO_CHANGE
from tests.fakes.discord import FakeDiscord
from tests.test_discord.conftest import PacedService, Starter, World, bind


async def test_options_without_a_note_change_nothing(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    key = session_key(world.guild.id, world.rp.id)
    said = await fake.slash(world.rp, world.gm, "session note", depth=2, role="user")
    assert NO_NOTE_TO_CHANGE in said.text and "\n" not in said.text
    assert await service.author_note(key) is None
