"""A SillyTavern group definition (``groups/<id>.json``) imported into a session sets its
group: members found among the realm's cards by avatar file name, muted members, strategy
and mode; the session then plays on as that group."""

from __future__ import annotations

import json

import pytest

from adapters.storage import SqlStorage
from engine.errors import FormatError, NotFoundError
from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_turns.conftest import KEY, line
from tests.test_turns.group_support import card_bytes, stored_floors

pytestmark = pytest.mark.timeout(60)


def group_file(**changes: object) -> bytes:
    group: dict[str, object] = {
        "id": "1700000000000",
        "name": "Harbour crew",
        "members": ["Mira.png", "bob.png", "Cid.png"],
        "disabled_members": ["Cid.png"],
        "activation_strategy": 1,  # list
        "generation_mode": 2,  # join, muted members included
        "generation_mode_join_prefix": "<{{char}}>",
        "generation_mode_join_suffix": "</{{char}}>",
        "allow_self_responses": True,
        "chat_id": "Harbour crew - 2024-01-01",
        "chats": ["Harbour crew - 2024-01-01"],
    }
    group.update(changes)
    return json.dumps(group).encode()


async def test_a_group_definition_sets_the_sessions_group_and_it_plays(
    remote: TavernService, storage: SqlStorage, fake: FakeOpenAIServer
) -> None:
    for name in ("Mira", "Bob", "Cid"):
        await remote.import_asset(
            KEY, "card", f"{name}.json", card_bytes(name, f"{name} card."), bind=False
        )
    summary = await remote.import_asset(KEY, "group", "1700000000000.json", group_file())
    assert (summary.kind, summary.name) == ("group", "Harbour crew")
    assert summary.details["members"] == ["Mira", "Bob", "Cid"]  # bob.png is the card Bob
    info = await remote.session_info(KEY)
    assert (info.members, info.muted, info.strategy, info.group_mode, info.character) == (
        ("Mira", "Bob", "Cid"),
        ("Cid",),
        "list",
        "join",
        "Mira",
    )
    fake.script(FakeReply(text="M."), FakeReply(text="B."))
    await remote.respond(KEY, MAIN_BRANCH, [line("Evening, all.")])
    assert [f.speaker for f in await stored_floors(storage)] == ["Mira", "Bob"]
    # join with muted members: Cid's card is in the prompt too, wrapped.
    assert "<Cid>Cid card.</Cid>" in str(fake.chat_requests[0].messages)


async def test_a_group_with_a_member_the_realm_lacks_is_refused(remote: TavernService) -> None:
    await remote.import_asset(KEY, "card", "Mira.json", card_bytes("Mira", "M."), bind=False)
    with pytest.raises(NotFoundError, match="no card for bob, Cid \\(its cards: Mira\\)"):
        await remote.import_asset(KEY, "group", "g.json", group_file())
    assert (await remote.session_info(KEY)).members == ()
    with pytest.raises(FormatError, match="unknown activation strategy 7"):
        await remote.import_asset(KEY, "group", "g.json", group_file(activation_strategy=7))
