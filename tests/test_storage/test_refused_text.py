"""Characters a database refuses (NUL, lone surrogates) are stored as U+FFFD on SQLite and
PostgreSQL alike, and an unexpected driver error reaches the caller as a StorageError that
says only an error id (the SQL and its parameters go to the log under that id)."""

from __future__ import annotations

import logging
import re

import pytest
from sqlalchemy import text

from adapters.storage import SqlStorage
from engine.errors import StorageError
from engine.incidents import ERROR_ID_BYTES
from engine.timeline.values import NewMessage
from tests.test_storage.support import World, put

pytestmark = pytest.mark.asyncio

NUL_TEXT = "a\x00b"
LONE = "c\ud800d"


async def test_nul_and_lone_surrogates_in_text_are_stored_as_replacement(
    storage: SqlStorage,
) -> None:
    world = World(storage)
    opened = await world.session()
    floor = await world.timeline.open_floor(
        opened.main.id,
        [NewMessage(role="user", raw=NUL_TEXT, speaker_id="u1", speaker_name="A\x00nn")],
    )
    await world.timeline.start_generating(floor.id)
    page = await world.timeline.add_page(floor.id)
    await world.timeline.commit_page(
        page.id, messages=[NewMessage(role="assistant", raw=LONE + NUL_TEXT)]
    )
    async with storage.read() as uow:
        stored = await uow.messages.of_floors([floor.id])
    assert [(m.raw, m.speaker_name) for m in stored] == [
        ("a\ufffdb", "A\ufffdnn"),
        ("c\ufffdda\ufffdb", None),
    ]


async def test_nul_in_json_values_and_keys_is_stored_as_replacement(
    storage: SqlStorage,
) -> None:
    world = World(storage)
    opened = await world.session()
    await world.turn(opened.main.id, writes=[put("chat", "k\x00", {"x": ["v\x00", LONE]})])
    async with storage.unit_of_work() as uow:
        await uow.assets.put(
            realm_id=opened.realm.id, kind="card", name="Nul", data={"desc": NUL_TEXT}
        )
    async with storage.read() as uow:
        values = await uow.variables.values("chat", opened.session.id)
        asset = await uow.assets.get(opened.realm.id, "card", "Nul")
    assert values == {"k\ufffd": {"x": ["v\ufffd", "c\ufffdd"]}}
    assert asset is not None and dict(asset.data) == {"desc": "a\ufffdb"}


async def test_unexpected_driver_error_says_only_an_error_id(
    storage: SqlStorage, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "the-players-private-words"
    with caplog.at_level(logging.ERROR), pytest.raises(StorageError) as raised:
        async with storage.unit_of_work() as uow:
            await uow.connection.execute(
                text("SELECT * FROM no_such_table WHERE x = :x"), {"x": secret}
            )
    shown = str(raised.value)
    assert shown == f"storage failed (error {raised.value.error_id})"
    assert re.fullmatch(f"[0-9a-f]{{{2 * ERROR_ID_BYTES}}}", raised.value.error_id)
    assert secret not in shown and "SELECT" not in shown
    logged = [r for r in caplog.records if raised.value.error_id in r.getMessage()]
    assert logged and "no_such_table" in logged[0].getMessage()
