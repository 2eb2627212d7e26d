"""``/session note``: members read the Author's Note, the game master sets and clears it."""

from __future__ import annotations

from adapters.discord.convert import session_key
from engine.prompt.inputs import NOTE_BEFORE_PROMPT, AuthorNote
from engine.turns.notes import MAX_NOTE_DEPTH
from tests.fakes.discord import FakeDiscord
from tests.test_discord.conftest import PacedService, Starter, World, bind


async def test_game_master_sets_members_read_and_others_are_refused(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    key = session_key(world.guild.id, world.rp.id)

    made = await fake.slash(
        world.rp, world.gm, "session note", text=" Mind the storm. ", depth=1, role="user"
    )
    assert made.ephemeral
    assert (
        made.text
        == "Set. Author's Note (in the chat at depth 1 as user, every turn): Mind the storm."
    )
    # Options alone keep the text; the choices map to the assembler's numbers.
    await fake.slash(world.rp, world.gm, "session note", position="before_prompt", interval=3)
    expected = AuthorNote(
        text="Mind the storm.", depth=1, role=1, interval=3, position=NOTE_BEFORE_PROMPT
    )
    assert await service.author_note(key) == expected

    shown = await fake.slash(world.rp, world.alice, "session note")
    assert shown.ephemeral
    assert shown.text == (
        "Author's Note (before the main prompt, every 3 user messages): Mind the storm."
    )
    calls_before = len(service.calls)
    for options in ({"text": "Chaos!"}, {"clear": True}, {"depth": 0}):
        refused = await fake.slash(world.rp, world.alice, "session note", **options)
        assert "Game Master" in refused.text and refused.ephemeral
    assert service.calls[calls_before:] == []
    assert await service.author_note(key) == expected

    bad = await fake.slash(world.rp, world.gm, "session note", depth=MAX_NOTE_DEPTH + 1)
    assert f"author_note.depth must be a whole number from 0 to {MAX_NOTE_DEPTH}" in bad.text
    mixed = await fake.slash(world.rp, world.gm, "session note", clear=True, text="x")
    assert "Use `clear` on its own." in mixed.text
    assert await service.author_note(key) == expected

    cleared = await fake.slash(world.rp, world.gm, "session note", clear=True)
    assert cleared.text == "Author's Note cleared."
    assert await service.author_note(key) is None


async def test_an_unbound_channel_has_no_note(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    record = await fake.slash(world.other, world.gm, "session note", text="hello")
    assert "not bound" in record.text
    assert not [c for c in service.calls if c[0] == "set_author_note"]


async def test_session_info_shows_the_note_in_one_line(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    before = await fake.slash(world.rp, world.alice, "session info")
    assert before.text.splitlines()[-1] == "No Author's Note."
    await fake.slash(world.rp, world.gm, "session note", text="Keep it short.\nNo lists.", depth=2)
    shown = await fake.slash(world.rp, world.alice, "session info")
    assert shown.text.splitlines()[-1] == (
        "Author's Note (in the chat at depth 2 as system, every turn): Keep it short. No lists."
    )
    await fake.slash(world.rp, world.gm, "session note", clear=True)
    after = await fake.slash(world.rp, world.alice, "session info")
    assert after.text == before.text
