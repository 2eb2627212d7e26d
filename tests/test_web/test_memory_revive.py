"""Reviving a forgotten memory record from the memory page: the forgotten filter lists it, an
admin's revive makes it active again (through the memory service's ``revive``), and the
refusals (a read-only token, another realm's token, an active record, a record an edit
replaced) leave everything as it was."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from engine.errors import InvalidTransitionError, NotFoundError
from engine.memory.lineage import Viewpoint
from tests.test_web.memory_api import TIMEOUT, auth, memory_records, post_form
from tests.test_web.played import PlayedServer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
        yield session


async def _records(http: aiohttp.ClientSession, played: PlayedServer, state: str = "") -> Any:
    return await memory_records(http, played, state=state)


async def test_a_forgotten_record_is_listed_and_revived(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    active = await _records(http, played, "active")
    assert active and all(r["lifecycle"] == "active" for r in active.values())
    target = next(iter(active))
    assert target not in await _records(http, played, "forgotten")

    done = await post_form(http, played, f"/memory/{target}/forget", played.token)
    assert done.status == 303
    forgotten = await _records(http, played, "forgotten")
    assert forgotten[target]["lifecycle"] == "deprecated"
    assert all(r["lifecycle"] == "deprecated" for r in forgotten.values())
    page = f"{played.url}/sessions/{played.session_id}/memory"
    async with http.get(page, params={"state": "forgotten"}, headers=auth(played.token)) as r:
        html = await r.text()
    assert f"/memory/{target}/revive" in html and ">Revive</button>" in html

    # Refused: a read-only token, another realm's admin, no token; nothing changes.
    reader = played.issue("read", "console:local")
    stranger = played.issue("admin", "console:elsewhere")
    assert (await post_form(http, played, f"/memory/{target}/revive", reader)).status == 403
    assert (await post_form(http, played, f"/memory/{target}/revive", stranger)).status == 404
    async with http.post(f"{page}/{target}/revive", allow_redirects=False) as response:
        assert response.status == 401
    assert (await _records(http, played, "forgotten"))[target]["lifecycle"] == "deprecated"

    done = await post_form(http, played, f"/memory/{target}/revive", played.token)
    assert done.status == 303 and "revived" in done.headers["Location"]
    after = await _records(http, played)
    assert after[target]["lifecycle"] == "active"
    assert target not in await _records(http, played, "forgotten")
    # An active record cannot be revived (one line, nothing changes).
    again = await post_form(http, played, f"/memory/{target}/revive", played.token)
    assert again.status == 303 and "only+a+forgotten+one" in again.headers["Location"]
    assert await _records(http, played) == after


async def test_a_record_an_edit_replaced_is_not_revived(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    before = await _records(http, played, "active")
    old = next(r for r in before.values() if r["tier"] == "micro")
    done = await post_form(http, played, f"/memory/{old['id']}/edit", played.token, text="Redone.")
    assert done.status == 303 and "done=" in done.headers["Location"]
    refused = await post_form(http, played, f"/memory/{old['id']}/revive", played.token)
    assert refused.status == 303 and "was+replaced+by" in refused.headers["Location"]
    assert (await _records(http, played, "forgotten"))[old["id"]]["lifecycle"] == "deprecated"


async def test_the_service_checks_realm_and_lineage(played: PlayedServer) -> None:
    memory = played.app.service.memory
    session = played.call(played.app.service.timeline.find_session("console", "harbor"))
    records = played.call(
        memory.list_records(str(session.realm_id), str(session.id), include_inactive=True)
    )
    record = records[0]
    played.call(memory.forget(record.id))
    elsewhere = Viewpoint(
        realm_id="another-realm", session_id=str(session.id), branch_id="1", floor_no=1
    )
    with pytest.raises(NotFoundError):
        played.call(memory.revive(record.id, view=elsewhere))
    off_lineage = Viewpoint(
        realm_id=str(session.realm_id),
        session_id=str(session.id),
        branch_id="no-such-branch",
        floor_no=99,
    )
    record = next(r for r in records if r.origin_branch is not None)
    played.call(memory.forget(record.id))
    with pytest.raises(NotFoundError):
        played.call(memory.revive(record.id, view=off_lineage))
    with pytest.raises(NotFoundError):
        played.call(memory.revive("mem-missing", view=elsewhere))
    assert played.call(memory.repo.get_records([record.id]))[0].lifecycle.value == "deprecated"


def test_reviving_an_active_record_is_an_invalid_transition() -> None:
    from datetime import UTC, datetime

    from engine.memory.records import (
        MemoryKind,
        MemoryRecord,
        MemoryScope,
        MemorySource,
        Provenance,
    )
    from engine.memory.revival import plan_revive

    now = datetime(2026, 1, 1, tzinfo=UTC)
    record = MemoryRecord(
        id="m1",
        kind=MemoryKind.FACT,
        scope=MemoryScope.CHAT,
        scope_id="s",
        realm_id="r",
        session_id="s",
        origin_branch=None,
        text="x",
        provenance=Provenance(source=MemorySource.MANUAL, floor_no=1),
        created_at=now,
        created_floor=1,
    )
    with pytest.raises(InvalidTransitionError):
        plan_revive(record, (), (), now=now)
