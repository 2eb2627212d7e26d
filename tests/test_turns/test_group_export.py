"""``export_group``: the session's group as a SillyTavern group definition. An imported file
keeps every field it had (SillyTavern's own and unknown keys) with the group's current state
written over it; a group made here gets a new file; a solo session is refused in one line."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from adapters.storage import SqlStorage
from engine.errors import NotFoundError
from engine.turns.service import TavernService
from tests.test_turns.conftest import KEY, Recorder, offline_service
from tests.test_turns.group_support import card_bytes

pytestmark = pytest.mark.timeout(60)

ST_DEFINITION: dict[str, object] = {
    "id": "1717171717171",
    "name": "Harbour crew",
    "members": ["Mira.png", "bob.png", "Cid.png"],
    "avatar_url": "data:image/png;base64,AAAA",
    "allow_self_responses": True,
    "activation_strategy": 1,  # list
    "generation_mode": 2,  # join, muted members included
    "disabled_members": ["Cid.png"],
    "chat_metadata": {"note_prompt": "kept"},
    "fav": True,
    "chat_id": "Harbour crew - 2025-01-01@12h00m00s",
    "chats": ["Harbour crew - 2025-01-01@12h00m00s", "older"],
    "auto_mode_delay": 9,
    "generation_mode_join_prefix": "<{{char}}>",
    "generation_mode_join_suffix": "</{{char}}>",
    "hideMutedSprites": True,
    "date_added": 1717171717171.5,
    "create_date": "2025-1-1 @12h 00m 00s 000ms",
    "past_metadata": {"Harbour crew - old": {"variables": {"x": 1}}},
    "some_extension_key": [1, {"x": None}],
}


async def _import_crew(service: TavernService) -> None:
    for name in ("Mira", "Bob", "Cid", "Dee"):
        await service.import_asset(
            KEY, "card", f"{name}.json", card_bytes(name, f"{name}."), bind=False
        )
    await service.import_asset(
        KEY, "group", "1717171717171.json", json.dumps(ST_DEFINITION).encode()
    )


async def test_an_imported_group_exports_every_field_with_the_changes(
    service: TavernService,
) -> None:
    await _import_crew(service)
    untouched = json.loads(await service.export_group(KEY))
    assert untouched == ST_DEFINITION  # nothing changed: the file as it came

    await service.mute_member(KEY, "Cid", False)
    await service.mute_member(KEY, "Bob", True)
    await service.set_group_strategy(KEY, "pooled")
    await service.set_group_mode(KEY, "swap")
    await service.add_member(KEY, "Dee")
    exported = json.loads(await service.export_group(KEY))
    changed = {
        # bob.png keeps the file name it was imported with; Dee, added here, is Dee.png.
        "members": ["Mira.png", "bob.png", "Cid.png", "Dee.png"],
        "disabled_members": ["bob.png"],
        "activation_strategy": 3,
        "generation_mode": 0,
    }
    assert exported == {**ST_DEFINITION, **changed}


async def test_join_without_muted_members_and_removed_members(service: TavernService) -> None:
    await _import_crew(service)
    # join without muted members (mode 1) comes from a file: the services have no switch for it
    await service.import_asset(
        KEY,
        "group",
        "g.json",
        json.dumps({**ST_DEFINITION, "generation_mode": 1}).encode(),
    )
    await service.remove_member(KEY, "Cid")
    exported = json.loads(await service.export_group(KEY))
    assert exported["generation_mode"] == 1
    assert exported["members"] == ["Mira.png", "bob.png"]
    # Cid muted and gone: no one of the group is muted now.
    assert exported["disabled_members"] == []


async def test_import_export_import_gives_the_same_group(service: TavernService) -> None:
    await _import_crew(service)
    await service.mute_member(KEY, "Bob", True)
    await service.set_group_strategy(KEY, "natural")
    before = await service.session_info(KEY)
    exported = await service.export_group(KEY)
    await service.set_group_strategy(KEY, "manual")  # changed in between, restored by import
    await service.mute_member(KEY, "Cid", False)
    await service.import_asset(KEY, "group", "again.json", exported)
    after = await service.session_info(KEY)
    fields = ("members", "muted", "strategy", "group_mode", "character")
    assert [getattr(after, f) for f in fields] == [getattr(before, f) for f in fields]
    assert json.loads(await service.export_group(KEY)) == json.loads(exported)


class _Clock:
    def now(self) -> datetime:
        return datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


async def test_a_group_made_here_gets_a_new_definition(
    storage: SqlStorage, events: Recorder
) -> None:
    service = offline_service(storage, events, clock=_Clock())
    await service.start()
    await service.open_session(KEY)
    await service.import_asset(KEY, "card", "Mira.json", card_bytes("Mira", "M."))
    await service.import_asset(KEY, "card", "Bob.json", card_bytes("Bob", "B."), bind=False)
    await service.add_member(KEY, "Bob")
    await service.set_group_mode(KEY, "join")
    new_id = str(int(_Clock().now().timestamp() * 1000))
    exported = json.loads(await service.export_group(KEY))
    assert exported["id"] == exported["chat_id"] == new_id
    assert exported["chats"] == [new_id]
    assert (exported["name"], exported["members"]) == ("Mira, Bob", ["Mira.png", "Bob.png"])
    assert (exported["generation_mode"], exported["activation_strategy"]) == (1, 0)


async def test_a_solo_session_has_no_group_to_export(service: TavernService) -> None:
    with pytest.raises(NotFoundError, match="^session test plays no character; a group"):
        await service.export_group(KEY)
    await service.import_asset(KEY, "card", "Mira.json", card_bytes("Mira", "M."))
    with pytest.raises(
        NotFoundError, match="^session test plays one character; a group needs two: /character"
    ):
        await service.export_group(KEY)
