"""A failed floor is part of the chat (issue 12, "nothing is lost"): it keeps its number and
the user's input, whatever failed."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from adapters.storage import SqlStorage
from adapters.storage.archive_repo import SqlArchiveRepository
from engine.errors import EngineError
from engine.timeline.values import NewMessage
from engine.turns import turns
from engine.turns.api import MAIN_BRANCH
from engine.turns.errors import NothingToDoError
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
    monkeypatch.setattr(turns, "read_turn", broken_read)
    with pytest.raises(EngineError):
        await service.respond(KEY, MAIN_BRANCH, [line("my first words")])
    assert await _failed_floors(storage) == [(1, ["my first words"])]


async def _fail_a_turn(service: TavernService, text: str) -> None:
    """A turn whose model call fails after its floor was opened (as a crash or a 500)."""
    ids = await service.parts.sessions.ids(KEY)
    branch = await service.parts.sessions.branch(ids.session_id, MAIN_BRANCH)
    floor = await service.timeline.open_floor(
        branch.id, [NewMessage(role="user", raw=text, speaker_name="Ann")]
    )
    await service.timeline.start_generating(floor.id)
    page = await service.timeline.add_page(floor.id)
    await service.timeline.fail_page(page.id, "interrupted")


async def test_a_failed_floor_stays_in_history_prompt_and_exports(
    service: TavernService, storage: SqlStorage
) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("one")])
    await _fail_a_turn(service, "two, never answered")
    reply = await service.respond(KEY, MAIN_BRANCH, [line("three")])
    assert reply.floor == 3  # floor 2 keeps its number

    history = await service.history(KEY, MAIN_BRANCH)
    assert [(v.floor, v.failed) for v in history] == [(1, False), (2, True), (3, False)]
    assert (history[1].text, history[1].pages) == ("two, never answered", 0)
    assert [v.floor for v in await service.history(KEY, MAIN_BRANCH, limit=2)] == [2, 3]

    # The next prompt holds the failed floor's message, in its place.
    dry = await service.dry_run(KEY, MAIN_BRANCH, "four")
    said = [m["content"] for m in dry["messages"] if m["role"] == "user"]
    assert [s for s in said if s in ("one", "two, never answered", "three", "four")] == [
        "one",
        "two, never answered",
        "three",
        "four",
    ]

    # SillyTavern JSONL: the user's message is kept, with no reply after it.
    rows = [json.loads(x) for x in (await service.export_chat(KEY, MAIN_BRANCH)).splitlines()]
    users = [r["mes"] for r in rows[1:] if r.get("is_user")]
    assert users == ["one", "two, never answered", "three"]
    # The native archive keeps the failed floor, its number and its input.
    archive = await SqlArchiveRepository(storage).export_session(
        KEY.platform, KEY.key, now=datetime.now(UTC)
    )
    (failed,) = [f for f in archive.floors if f.state == "failed"]
    index = archive.floors.index(failed)
    assert failed.seq == 2
    assert [m.raw for m in archive.messages if m.floor == index] == ["two, never answered"]


async def test_regenerate_retries_a_failed_latest_floor(
    service: TavernService, storage: SqlStorage
) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("one")])
    await _fail_a_turn(service, "two")
    with pytest.raises(NothingToDoError, match="floor 2 of branch 'main' failed"):
        await service.continue_reply(KEY, MAIN_BRANCH)
    retried = await service.regenerate(KEY, MAIN_BRANCH)
    assert (retried.floor, retried.page, retried.pages) == (2, 1, 1)
    assert "two" in retried.text  # the offline model answers the failed floor's own input
    history = await service.history(KEY, MAIN_BRANCH)
    assert [(v.floor, v.failed) for v in history] == [(1, False), (2, False)]
    assert history[1].text == retried.text
    async with storage.read() as uow:
        assert await uow.floors.in_state("failed") == []
        (floor,) = [f for f in await uow.floors.in_state("committed") if f.seq == 2]
        pages = await uow.pages.of_floors([floor.id])
    # The failed attempt stays for diagnosis; the retry is the active page.
    assert [(p.number, p.status) for p in pages] == [(1, "failed"), (2, "committed")]
    assert floor.active_page == 2
    assert (await service.respond(KEY, MAIN_BRANCH, [line("three")])).floor == 3


async def test_a_chat_whose_first_message_failed_gets_no_greeting_after_it(
    service: TavernService,
) -> None:
    card = {"name": "Mira", "first_mes": "Hello, I am Mira.", "description": ""}
    await service.import_asset(KEY, "card", "mira.json", json.dumps(card).encode())
    await _fail_a_turn(service, "hi?")
    assert await service.greet(KEY, MAIN_BRANCH) is None
    history = await service.history(KEY, MAIN_BRANCH)
    assert [(v.floor, v.failed, v.text) for v in history] == [(1, True, "hi?")]


async def test_a_fork_after_a_failed_floor_sees_its_message(service: TavernService) -> None:
    await service.set_variable(KEY, MAIN_BRANCH, "mood", "calm", "branch")
    await service.respond(KEY, MAIN_BRANCH, [line("one")])
    await _fail_a_turn(service, "two")
    await service.respond(KEY, MAIN_BRANCH, [line("three")])
    await service.fork(KEY, MAIN_BRANCH, after_floor=2, name="side")
    history = await service.history(KEY, "side")
    assert [(v.floor, v.failed) for v in history] == [(1, False), (2, True)]
    assert await service.variables(KEY, "side") == {"mood": "calm"}
    assert (await service.respond(KEY, "side", [line("elsewhere")])).floor == 3
