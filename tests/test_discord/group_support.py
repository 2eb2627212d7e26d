"""Helpers of the Discord group tests on the real engine: two member cards (Mira and Finn, who
speak only when named: talkativeness 0), a group session in #rp, and the webhook messages with
the names they were posted under."""

from __future__ import annotations

import json

from adapters.discord.runner import DiscordRunner
from tests.fakes.discord import FakeDiscord
from tests.test_discord.conftest import World
from tests.test_discord.real_engine import RealStarter, webhook_replies

MIRA = "Mira keeps the lighthouse."
FINN = "Finn sails the ferry."


def member_card(name: str, description: str, *, talkativeness: float = 0.0) -> tuple[str, bytes]:
    """A V2 card file as ``/character import`` takes it (no greeting)."""
    data = {
        "name": name,
        "description": description,
        "first_mes": "",
        "extensions": {"talkativeness": talkativeness},
    }
    body = {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}
    return (f"{name.lower()}.json", json.dumps(body).encode())


async def import_members(fake: FakeDiscord, world: World, *names: str) -> None:
    """A game master imports the cards named (from Mira, Finn, Cid) outside #rp."""
    texts = {"Mira": MIRA, "Finn": FINN, "Cid": "Cid mends the nets."}
    for name in names:
        record = await fake.slash(
            world.other, world.gm, "character import", file=member_card(name, texts[name])
        )
        assert f"Imported card **{name}**" in record.text, record.text


async def start_group(fake: FakeDiscord, world: World, start_real: RealStarter) -> DiscordRunner:
    """A bot on the engine, and #rp bound to the group of Mira (first) and Finn."""
    runner = await start_real()
    await import_members(fake, world, "Mira", "Finn")
    record = await fake.slash(
        world.rp, world.gm, "tavern start", character="Mira", character2="Finn"
    )
    assert "**Mira** and **Finn** play here now" in record.text, record.text
    return runner


def said(fake: FakeDiscord, channel_id: int) -> list[tuple[str, str]]:
    """``(webhook name, content)`` of each character message in a channel, oldest first."""
    return [(m["author"]["username"], m["content"]) for m in webhook_replies(fake, channel_id)]
