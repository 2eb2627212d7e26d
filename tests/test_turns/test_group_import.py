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


def st_group_chat() -> bytes:
    """A group chat as SillyTavern saves one (``group chats/<chat_id>.jsonl``): a header with
    ``unused`` names, then each message with its speaker's name, avatar and swipes."""
    header = {"user_name": "unused", "character_name": "unused", "chat_metadata": {}}

    def said(name: str, text: str, *, user: bool = False, **more: object) -> dict[str, object]:
        line: dict[str, object] = {
            "name": name,
            "is_user": user,
            "is_system": False,
            "send_date": "January 1, 2024 8:00pm",
            "mes": text,
            "extra": {},
        }
        if not user:
            line["force_avatar"] = f"/thumbnail?type=avatar&file={name}.png"
            line["original_avatar"] = f"{name}.png"
        line.update(more)
        return line

    lines = [
        header,
        said("Ann", "Who keeps the light tonight?", user=True),
        said("Mira", "I do.", swipes=["I do.", "Me, as always."], swipe_id=0),
        said("Bob", "And I sail at dawn."),
        said("Ann", "Good.", user=True),
        said("Bob", "Aye."),
    ]
    return "\n".join(json.dumps(line) for line in lines).encode()


async def test_a_sillytavern_group_chat_and_its_definition_import_and_play_on(
    remote: TavernService, storage: SqlStorage, fake: FakeOpenAIServer
) -> None:
    for name in ("Mira", "Bob", "Cid"):
        await remote.import_asset(
            KEY, "card", f"{name}.json", card_bytes(name, f"{name} card."), bind=False
        )
    await remote.import_asset(KEY, "group", "1700000000000.json", group_file())
    chat = await remote.import_asset(
        KEY, "chat", "Harbour crew - 2024-01-01.jsonl", st_group_chat()
    )
    branch = chat.details["branch"]
    history = await remote.history(KEY, branch)
    assert [(h.inputs, h.character, h.text, h.pages) for h in history] == [
        ((("Ann", "Who keeps the light tonight?"),), "Mira", "I do.", 2),
        ((), "Bob", "And I sail at dawn.", 1),
        ((("Ann", "Good."),), "Bob", "Aye.", 1),
    ]
    assert [f.speaker for f in await stored_floors(storage, branch)] == ["Mira", "Bob", "Bob"]
    # It plays on as the group (list strategy: Mira then Bob; Cid is muted), each reply
    # seeing the imported story with its speakers named.
    fake.script(FakeReply(text="The lamp is trimmed."), FakeReply(text="The tide is right."))
    last = await remote.respond(KEY, branch, [line("Ready?")])
    assert (last.floor, last.character) == (5, "Bob")
    first = str(fake.chat_requests[0].messages)
    assert "Bob: And I sail at dawn." in first and "Who keeps the light tonight?" in first
    # The export gives every imported message back with its name, avatar and swipes.
    rows = [json.loads(r) for r in (await remote.export_chat(KEY, branch)).decode().splitlines()]
    original = [json.loads(r) for r in st_group_chat().decode().splitlines()]
    for mine, theirs in zip(rows[1:6], original[1:], strict=True):
        for field in ("name", "is_user", "mes", "force_avatar", "original_avatar", "swipes"):
            assert mine.get(field) == theirs.get(field), field
    assert [(r["name"], r["mes"]) for r in rows[6:]] == [
        ("Ann", "Ready?"),
        ("Mira", "The lamp is trimmed."),
        ("Bob", "The tide is right."),
    ]
