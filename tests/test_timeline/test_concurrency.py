"""Racing writers: exactly one of several concurrent commits of one floor wins, on a SQLite
file database and on PostgreSQL (each unit of work has its own connection)."""

from __future__ import annotations

import asyncio

from engine.errors import ConflictError, EngineError, InvalidTransitionError
from engine.timeline.values import NewMessage
from tests.test_storage.support import World, put

RACERS = 5


async def test_concurrent_commits_of_one_floor_have_one_winner(storage) -> None:
    world = World(storage)
    opened = await world.session()
    floor = await world.timeline.open_floor(opened.main.id)
    await world.timeline.start_generating(floor.id)
    page = await world.timeline.add_page(floor.id)

    async def commit(n: int) -> object:
        return await world.timeline.commit_page(
            page.id,
            messages=[NewMessage(role="assistant", raw=f"reply {n}")],
            writes=[put("branch", "counter", n), put("chat", "visits", n)],
        )

    results = await asyncio.gather(*(commit(n) for n in range(RACERS)), return_exceptions=True)
    winners = [r for r in results if not isinstance(r, BaseException)]
    losers = [r for r in results if isinstance(r, BaseException)]
    assert len(winners) == 1, results
    assert all(isinstance(r, ConflictError | InvalidTransitionError) for r in losers), losers
    view = await world.history.floor_view(opened.main.id, 1)
    assert len(view.replies) == 1  # the losers' messages were rolled back
    winner = int(view.replies[0].raw.split()[1])
    state = await world.variables.state(opened.main.id)
    assert state.branch == {"counter": winner} and state.chat == {"visits": winner}
    history = await world.variables.history(opened.main.id, "counter")
    assert [h.value for h in history] == [winner]


async def test_commit_racing_a_failure_has_one_winner(storage) -> None:
    world = World(storage)
    opened = await world.session()
    floor = await world.timeline.open_floor(opened.main.id)
    await world.timeline.start_generating(floor.id)
    page = await world.timeline.add_page(floor.id)
    results = await asyncio.gather(
        world.timeline.commit_page(page.id, writes=[put("branch", "x", 1)]),
        world.timeline.fail_page(page.id, "cancelled"),
        return_exceptions=True,
    )
    assert sum(not isinstance(r, BaseException) for r in results) == 1, results
    assert all(isinstance(r, EngineError) for r in results if isinstance(r, BaseException))
    final = await world.history.floor(floor.id)
    state = await world.variables.state(opened.main.id)
    if final.state == "committed":
        assert state.branch == {"x": 1}
    else:
        assert final.state == "failed" and state.branch == {}


async def test_concurrent_new_floors_on_one_branch_have_one_winner(storage) -> None:
    world = World(storage)
    opened = await world.session()
    results = await asyncio.gather(
        *(world.timeline.open_floor(opened.main.id) for _ in range(RACERS)),
        return_exceptions=True,
    )
    assert sum(not isinstance(r, BaseException) for r in results) == 1, results
    assert all(isinstance(r, ConflictError) for r in results if isinstance(r, BaseException))


async def test_concurrent_get_or_create_of_a_session_makes_one(storage) -> None:
    world = World(storage)
    results = await asyncio.gather(*(world.session("same") for _ in range(RACERS)))
    assert len({r.session.id for r in results}) == 1
    assert sum(r.created for r in results) == 1
    assert len(await world.timeline.branches(results[0].session.id)) == 1


async def test_a_reader_neither_waits_for_nor_sees_an_open_write(storage) -> None:
    world = World(storage)
    opened = await world.session()
    await world.variables.set(opened.main.id, "chat", "x", 1)
    writing = asyncio.Event()
    release = asyncio.Event()

    async def writer() -> None:
        async with storage.unit_of_work() as uow:
            await uow.variables.change("chat", opened.session.id, {"x": 2})
            writing.set()
            await release.wait()  # the write lock is held until the reader is done

    task = asyncio.create_task(writer())
    try:
        await writing.wait()
        # The guard only turns a hang into a failure; a reader that waited for the writer
        # would never finish, because the writer waits for the reader.
        state = await asyncio.wait_for(world.variables.state(opened.main.id), timeout=60)
        assert state.chat == {"x": 1}
    finally:
        release.set()
        await task
    assert (await world.variables.state(opened.main.id)).chat == {"x": 2}
