"""Helpers of the group turn tests: member cards, a two-member group and the stored floors."""

from __future__ import annotations

import json

from adapters.storage import SqlStorage
from engine.timeline.values import Floor
from engine.turns.service import TavernService
from tests.test_turns.conftest import KEY


def card_bytes(name: str, description: str, *, talkativeness: float = 0.0) -> bytes:
    """A V2 card; talkativeness 0 by default, so only the members a message names speak."""
    data = {
        "name": name,
        "description": description,
        "first_mes": "",
        "extensions": {"talkativeness": talkativeness},
    }
    return json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": data}).encode()


async def two_members(
    service: TavernService, *, mira: str = "Mira keeps the lighthouse.", talk: float = 0.0
) -> None:
    """A group of Mira (the session's character, first member) and Bob."""
    await service.import_asset(
        KEY, "card", "mira.json", card_bytes("Mira", mira, talkativeness=talk)
    )
    await service.import_asset(
        KEY,
        "card",
        "bob.json",
        card_bytes("Bob", "Bob sails the ferry.", talkativeness=talk),
        bind=False,
    )
    info = await service.add_member(KEY, "Bob")
    assert info.members == ("Mira", "Bob")


async def stored_floors(storage: SqlStorage, branch: str = "main") -> list[Floor]:
    """The branch's committed floors as stored, oldest first."""
    async with storage.read() as uow:
        session = await uow.sessions.find(KEY.platform, KEY.key)
        assert session is not None
        found = await uow.branches.find(session.id, branch)
        assert found is not None
        return await uow.floors.committed(found.id, 1, None)
