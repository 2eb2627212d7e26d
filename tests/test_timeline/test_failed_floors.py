"""A failed floor is part of the chat (issue 12, "nothing is lost"): it keeps its number and
the user's input, whatever failed."""

from __future__ import annotations

import pytest

from adapters.storage import SqlStorage
from engine.errors import EngineError
from engine.turns import turn_ops
from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.test_turns.conftest import KEY, Recorder, line, offline_service


@pytest.fixture
async def service(storage: SqlStorage) -> TavernService:
    svc = offline_service(storage, Recorder())
    await svc.start()
    await svc.open_session(KEY)
    return svc


async def _failed_floors(storage: SqlStorage) -> list[tuple[int, list[str]]]:
    async with storage.read() as uow:
        floors = await uow.floors.in_state("failed")
        messages = await uow.messages.of_floors([f.id for f in floors])
    return [(f.seq, [m.raw for m in messages if m.floor_id == f.id]) for f in floors]


async def test_a_failure_in_the_opening_unit_keeps_the_input(
    service: TavernService, storage: SqlStorage, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken_read(*args: object, **kwargs: object) -> None:
        raise RuntimeError("the read failed")

    # The read runs inside the unit of work that opens the floor: it rolls the floor back.
    monkeypatch.setattr(turn_ops, "read_turn", broken_read)
    with pytest.raises(EngineError):
        await service.respond(KEY, MAIN_BRANCH, [line("my first words")])
    assert await _failed_floors(storage) == [(1, ["my first words"])]

