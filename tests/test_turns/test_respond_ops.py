"""The respond path's single opening unit of work: a failure inside it rolls everything back
and leaves one failed floor as the record of the turn (as when the floor was opened in a unit
of its own); a busy branch leaves none; the next message works."""

from __future__ import annotations

import pytest

from adapters.storage import SqlStorage
from engine.errors import FormatError
from engine.timeline.errors import BranchBusyError
from engine.timeline.values import SessionSettings
from engine.turns.service import TavernService
from tests.test_turns.conftest import KEY, Recorder, line


async def _floors(storage: SqlStorage, branch_id: int) -> list[tuple[int, str]]:
    async with storage.read() as uow:
        floors = [f for s in ("committed", "failed") for f in await uow.floors.in_state(s)]
    return sorted((f.seq, f.state) for f in floors if f.branch_id == branch_id)


async def test_a_broken_asset_fails_the_turn_with_a_failed_floor_and_nothing_else(
    service: TavernService, storage: SqlStorage, events: Recorder
) -> None:
    await service.respond(KEY, "main", [line("hello")])
    ids = await service.parts.sessions.ids(KEY)
    branch = await service.parts.sessions.branch(ids.session_id, "main")
    async with storage.unit_of_work() as uow:
        await uow.assets.put(realm_id=ids.realm_id, kind="card", name="Bad", data={"x": 1})
    await service.timeline.update_settings(ids.session_id, SessionSettings(character="Bad"))
    with pytest.raises(FormatError):
        await service.respond(KEY, "main", [line("are you there?")])
    assert await _floors(storage, branch.id) == [(1, "committed"), (2, "failed")]
    async with storage.read() as uow:  # the failed turn kept its input (issue 12), no page
        failed = [f for f in await uow.floors.in_state("failed") if f.branch_id == branch.id]
        kept = await uow.messages.of_floors([failed[0].id])
        assert [(m.raw, m.page_id) for m in kept] == [("are you there?", None)]
        assert await uow.pages.of_floors([failed[0].id]) == []
    assert "generation.failed" in events.names()
    await service.timeline.update_settings(ids.session_id, SessionSettings())
    reply = await service.respond(KEY, "main", [line("now?")])
    assert reply.floor == 3  # the failed floor keeps its number
    assert await _floors(storage, branch.id) == [(1, "committed"), (2, "failed"), (3, "committed")]


async def test_a_busy_branch_leaves_no_floor(service: TavernService, storage: SqlStorage) -> None:
    await service.respond(KEY, "main", [line("hello")])
    ids = await service.parts.sessions.ids(KEY)
    branch = await service.parts.sessions.branch(ids.session_id, "main")
    floors = await service.history_service.latest_floor(branch.id)
    assert floors is not None
    page = await service.timeline.add_page(floors.id)  # another process regenerating
    with pytest.raises(BranchBusyError, match="regenerating"):
        await service.respond(KEY, "main", [line("wait")])
    assert await _floors(storage, branch.id) == [(1, "committed")]
    await service.timeline.fail_page(page.id, "stopped")
    assert (await service.respond(KEY, "main", [line("go on")])).floor == 2
