"""Slash commands: each works for whom it should, refuses others, and stays inside its guild."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from adapters.discord.convert import library_key, session_key
from engine.turns.api import MemoryView, OnText, ReplyView, SessionKey, UserLine
from tests.fakes.discord import FakeDiscord
from tests.test_discord.conftest import PacedService, Starter, World, bind, card

CARD = ("aqua.json", json.dumps({"name": "Aqua", "description": "a goddess"}).encode())


class ExtendedService(PacedService):
    """The fake service, recording the variables each turn saw."""

    def __init__(self) -> None:
        super().__init__()
        self.vars_at_respond: list[dict[str, Any]] = []

    async def respond(
        self,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
        **group: Any,
    ) -> ReplyView:
        self.vars_at_respond.append(await self.variables(key, branch))
        return await super().respond(key, branch, lines, on_text=on_text, **group)


# (command line, options, expected text for a permitted user)
READS = [
    ("vars list", {}, "Variables"),
    ("vars get", {"name": "gold"}, "`gold` = 10"),
    ("vars history", {"name": "gold"}, "History of `gold`"),
    ("character info", {}, "Character: **Seraphina**"),
    ("session info", {}, "Session `discord/"),
    ("session export", {}, "Exported branch `main`"),
    ("session note", {}, "No Author's Note. A game master can set one"),
    ("preview", {"text": "I am {{char}}"}, "I am Seraphina"),
    ("dryrun", {"text": "hi"}, "Assembled prompt: 1 messages"),
    ("memory list", {}, "`m1` Alice owes the innkeeper"),
    ("memory search", {"query": "well"}, "`m2` The well is cursed"),
]
WRITES = [
    ("vars set", {"name": "mood", "value": '"grim"'}, "Set `mood` = grim in chat"),
    ("vars delete", {"name": "gold"}, "Deleted `gold` from chat"),
    ("character import", {"file": CARD}, "Imported card **Aqua**"),
    ("character set", {"name": "Aqua"}, "**Aqua** plays here now"),
    ("preset import", {"file": ("p.json", b'{"name": "Dark"}')}, "Imported preset **Dark**"),
    ("preset set", {"name": "Dark"}, "Using preset **Dark**"),
    ("worldbook import", {"file": ("w.json", b'{"name": "Eldoria"}')}, "Imported worldbook"),
    ("worldbook attach", {"name": "Eldoria"}, "Using worldbook **Eldoria**"),
    ("worldbook detach", {"name": "Eldoria"}, "Detached worldbook **Eldoria**"),
    ("regex import", {"file": ("r.json", b'{"name": "Trim"}')}, "Imported regex **Trim**"),
    ("memory forget", {"memory_id": "m1"}, "Forgot memory `m1`"),
    ("session reset", {}, "starts over"),
    ("session note", {"text": "Rain.", "depth": 2}, "Set. Author's Note (in the chat at depth 2"),
    ("session note", {"clear": True}, "Author's Note cleared"),
    ("tavern start", {"character": "Aqua"}, "**Aqua** plays here now"),
    ("tavern stop", {}, "The tavern is closed here"),
]
# What a game master does before a write can work (the asset it names must be imported).
NEEDS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "character set": [("character import", {"file": CARD})],
    "tavern start": [("character import", {"file": CARD})],
    "preset set": [("preset import", {"file": ("p.json", b'{"name": "Dark"}')})],
    "worldbook attach": [("worldbook import", {"file": ("w.json", b'{"name": "Eldoria"}')})],
    "worldbook detach": [("worldbook import", {"file": ("w.json", b'{"name": "Eldoria"}')})],
}


async def _prepared(fake: FakeDiscord, world: World, start_bot: Starter) -> ExtendedService:
    service = ExtendedService()
    await start_bot(service)
    await bind(world)
    await fake.slash(world.rp, world.gm, "vars set", name="gold", value="10")
    await fake.say(world.rp, world.alice, "hello")
    await fake.wait_for(lambda: service.respond_calls(), what="a first floor")
    await fake.wait_idle(quiet=0.15)
    realm = str(world.guild.id)
    for number, text in ((1, "Alice owes the innkeeper"), (2, "The well is cursed")):
        service.remember(
            realm,
            MemoryView(id=f"m{number}", kind="fact", text=text, scope="chat", importance=0.5),
        )
    return service


@pytest.mark.parametrize(("line", "options", "expected"), READS, ids=[r[0] for r in READS])
async def test_reads_are_open_to_members(
    fake: FakeDiscord,
    world: World,
    start_bot: Starter,
    line: str,
    options: dict,
    expected: str,
) -> None:
    await _prepared(fake, world, start_bot)
    record = await fake.slash(world.rp, world.alice, line, **options)
    assert expected in record.text
    assert record.ephemeral


@pytest.mark.parametrize(("line", "options", "expected"), WRITES, ids=[w[0] for w in WRITES])
async def test_writes_need_the_game_master(
    fake: FakeDiscord,
    world: World,
    start_bot: Starter,
    line: str,
    options: dict,
    expected: str,
) -> None:
    service = await _prepared(fake, world, start_bot)
    for needed, needed_options in NEEDS.get(line, []):
        done = await fake.slash(world.rp, world.gm, needed, **needed_options)
        assert "Imported" in done.text, done.text
    calls_before = len(service.calls)
    refused = await fake.slash(world.rp, world.alice, line, **options)
    assert "Game Master" in refused.text and refused.ephemeral
    assert [c[0] for c in service.calls[calls_before:]] == []
    allowed = await fake.slash(world.rp, world.gm, line, **options)
    assert expected in allowed.text, allowed.text
    assert allowed.ephemeral


async def test_export_and_dryrun_answer_with_attachments(
    fake: FakeDiscord, world: World, start_bot: Starter
) -> None:
    await _prepared(fake, world, start_bot)
    export = await fake.slash(world.rp, world.alice, "session export")
    name, data = export.files[0]
    assert name.endswith("-main.jsonl") and b"I hear you" in data
    dry = await fake.slash(world.rp, world.alice, "dryrun", text="probe")
    assert json.loads(dry.files[0][1])["messages"][0]["content"] == "probe"


async def test_manage_server_counts_as_game_master(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await fake.slash(world.rp2, world.gm2, "character import", file=card("Kazuma"))
    record = await fake.slash(world.rp2, world.gm2, "tavern start", character="Kazuma")
    assert "**Kazuma** plays here now" in record.text


async def test_start_refuses_a_character_this_guild_never_imported(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    key = session_key(world.guild.id, world.rp.id)
    nothing = await fake.slash(world.rp, world.gm, "tavern start", character="Aqua")
    assert "No character **Aqua**" in nothing.text and "`/character import`" in nothing.text
    assert nothing.ephemeral
    # Another guild's card does not count either.
    await fake.slash(world.rp2, world.gm2, "character import", file=card("Kazuma"))
    await fake.slash(world.rp, world.gm, "character import", file=CARD)
    other = await fake.slash(world.rp, world.gm, "tavern start", character="Kazuma")
    assert "No character **Kazuma** here. Imported: Aqua." in other.text, other.text
    assert other.ephemeral
    assert key not in service.sessions
    await fake.say(world.rp, world.alice, "hello?")
    await fake.wait_idle(quiet=0.3)
    assert service.respond_calls() == []
    # Names match exactly first, then ignoring case; the card's own spelling is bound.
    started = await fake.slash(world.rp, world.gm, "tavern start", character="aQUA")
    assert "**Aqua** plays here now" in started.text, started.text
    assert service.sessions[key].character == "Aqua"


async def test_start_binds_an_imported_preset_and_world_book_and_refuses_unknown_ones(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    key = session_key(world.guild.id, world.rp.id)
    await fake.slash(world.rp, world.gm, "character import", file=CARD)
    await fake.slash(world.rp, world.gm, "preset import", file=("p.json", b'{"name": "Dark"}'))
    # An unknown world book is refused before anything is bound.
    refused = await fake.slash(
        world.rp, world.gm, "tavern start", character="Aqua", preset="Dark", worldbook="Nope"
    )
    assert "No world book **Nope** here: none is imported yet." in refused.text, refused.text
    assert "`/worldbook import`" in refused.text and refused.ephemeral
    assert key not in service.sessions
    await fake.slash(
        world.rp, world.gm, "worldbook import", file=("w.json", b'{"name": "Eldoria"}')
    )
    started = await fake.slash(
        world.rp, world.gm, "tavern start", character="Aqua", preset="dark", worldbook="Eldoria"
    )
    assert "**Aqua** plays here now, preset **Dark**, worldbook **Eldoria**" in started.text
    session = service.sessions[key]
    assert (session.character, session.preset, session.worldbooks) == ("Aqua", "Dark", ["Eldoria"])


async def test_vars_set_reaches_the_next_prompt_and_stays_in_its_guild(
    fake: FakeDiscord, world: World, start_bot: Starter
) -> None:
    service = await _prepared(fake, world, start_bot)
    await fake.slash(world.rp, world.gm, "vars set", name="weather", value="storm", scope="global")
    await fake.slash(world.rp, world.gm, "vars set", name="mood", value="grim")
    await fake.say(world.rp, world.bob, "what now?")
    await fake.wait_for(lambda: len(service.respond_calls()) == 2, what="next floor")
    seen = service.vars_at_respond[-1]
    assert (seen["weather"], seen["mood"], seen["gold"]) == ("storm", "grim", 10)
    # The second guild sees nothing of the first.
    await fake.slash(world.rp2, world.gm2, "character import", file=card("Kazuma"))
    await fake.slash(world.rp2, world.gm2, "tavern start", character="Kazuma")
    for scope in (None, "global", "chat"):
        options = {"scope": scope} if scope else {}
        other = await fake.slash(world.rp2, world.gm2, "vars list", **options)
        assert "none" in other.text and "storm" not in other.text
    missing = await fake.slash(world.rp2, world.gm2, "vars get", name="weather")
    assert "not set" in missing.text
    assert await fake.autocomplete(world.rp2, world.gm2, "vars get", focused="name", name="") == []


async def test_autocomplete_offers_characters_and_variables_of_this_guild_only(
    fake: FakeDiscord, world: World, start_bot: Starter
) -> None:
    await _prepared(fake, world, start_bot)
    await fake.slash(world.rp, world.gm, "character import", file=CARD)
    names = await fake.autocomplete(
        world.rp, world.gm, "tavern start", focused="character", character="aq"
    )
    assert names == ["Aqua"]
    assert (
        await fake.autocomplete(
            world.rp2, world.gm2, "tavern start", focused="character", character=""
        )
        == []
    )
    assert await fake.autocomplete(
        world.rp, world.alice, "vars get", focused="name", name="go"
    ) == ["gold"]


async def test_unbound_channel_and_unknown_assets_are_explained(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    unbound = await fake.slash(world.other, world.alice, "vars list")
    assert "not bound" in unbound.text
    await bind(world)
    for line, options, what in [
        ("preset set", {"name": "Dark"}, "preset"),
        ("worldbook attach", {"name": "X"}, "worldbook"),
    ]:
        record = await fake.slash(world.rp, world.gm, line, **options)
        assert f"no {what} named" in record.text, record.text
    info = await service.session_info(session_key(world.guild.id, world.rp.id))
    assert (info.preset, info.worldbooks) == (None, ())


async def test_importing_into_an_unbound_channel_does_not_start_playing(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    record = await fake.slash(world.other, world.gm, "character import", file=CARD)
    assert "Imported card **Aqua**" in record.text
    await fake.say(world.other, world.alice, "hello?")
    await fake.wait_idle(quiet=0.3)
    assert service.respond_calls() == []
    # It went through the guild's library session, never opening #other's.
    library = library_key(str(world.guild.id))
    assert ("import_asset", (library, "card", "aqua.json")) in service.calls
    key = session_key(world.guild.id, world.other.id)
    assert key not in service.sessions


async def test_stop_keeps_the_story_and_start_resumes_it(
    fake: FakeDiscord, world: World, start_bot: Starter
) -> None:
    service = await _prepared(fake, world, start_bot)
    await fake.slash(world.rp, world.gm, "tavern stop")
    await fake.say(world.rp, world.alice, "anyone?")
    await fake.wait_idle(quiet=0.3)
    assert len(service.respond_calls()) == 1
    key = session_key(world.guild.id, world.rp.id)
    assert ("close_session", key) in service.calls
    assert (await service.session_info(key)).closed
    await bind(world)
    await fake.say(world.rp, world.alice, "back again")
    await fake.wait_for(lambda: len(service.respond_calls()) == 2, what="resumed")
    await fake.wait_idle(quiet=0.15)
    assert len(await service.history(key, "main")) == 2
