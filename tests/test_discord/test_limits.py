"""Named limits of the Discord front end and of the fake server."""

from __future__ import annotations

from collections import OrderedDict

import aiohttp
import pytest

from adapters.discord.commands import assets
from adapters.discord.commands.context import ANSWER_LIMIT, MAX_CHOICES, choices, clip
from adapters.discord.personas import MAX_PERSONA_DESCRIPTION, MAX_PERSONA_NAME, Personas
from adapters.discord.turns import MAX_SELF_DELETED, MAX_TRACKED_REPLIES
from engine.turns.api import SessionKey
from tests.fakes.discord import FakeDiscord, Limits
from tests.fakes.roleplay import FakeRoleplayService
from tests.test_discord.conftest import Starter, World, bind


def test_answers_are_clipped_to_one_message() -> None:
    assert clip("short") == "short"
    long = clip("x" * 5000)
    assert len(long) <= ANSWER_LIMIT < 2000 and long.endswith("(truncated)")


def test_autocomplete_offers_at_most_discords_limit() -> None:
    found = choices([f"name{i}" for i in range(100)], "name")
    assert len(found) == MAX_CHOICES == 25


async def test_persona_name_and_description_are_capped() -> None:
    personas = Personas(FakeRoleplayService())
    key = SessionKey(platform="discord", realm="1", key="2")
    await personas.set(key, "7", "n" * 500, "d" * 50_000)
    name, description = personas.describe("1", "7") or ("", "")
    assert (len(name), len(description)) == (MAX_PERSONA_NAME, MAX_PERSONA_DESCRIPTION)


async def test_reply_tracking_is_bounded(
    fake: FakeDiscord, world: World, start_bot: Starter
) -> None:
    runner = await start_bot()
    turns = runner.turns
    assert isinstance(turns.by_message, OrderedDict)
    for message_id in range(MAX_SELF_DELETED + 5):
        turns._note_self_delete(message_id)
    assert len(turns.self_deleted) == MAX_SELF_DELETED
    assert MAX_TRACKED_REPLIES >= 1_000


async def test_oversized_attachment_is_refused(
    fake: FakeDiscord, world: World, start_bot: Starter, monkeypatch: pytest.MonkeyPatch
) -> None:
    await start_bot()
    await bind(world)
    monkeypatch.setattr(assets, "MAX_ATTACHMENT_BYTES", 10)
    record = await fake.slash(
        world.rp, world.gm, "character import", file=("big.json", b'{"name": "Too big to import"}')
    )
    assert "larger than 10 bytes" in record.text


async def test_fake_refuses_work_past_its_request_budget() -> None:
    fake = await FakeDiscord(limits=Limits(max_lifetime_s=10, max_requests=2)).start()
    try:
        async with aiohttp.ClientSession() as http:
            statuses = []
            for _ in range(3):
                async with http.get(f"{fake.api_base}/gateway") as response:
                    statuses.append(response.status)
        assert statuses == [200, 200, 503]
    finally:
        await fake.stop()


async def test_fake_stops_itself_after_its_lifetime() -> None:
    fake = await FakeDiscord(limits=Limits(max_lifetime_s=0.1)).start()
    await fake.stopped.wait()
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientConnectionError):
            await http.get(f"{fake.api_base}/gateway")
