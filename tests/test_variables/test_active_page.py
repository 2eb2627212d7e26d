"""Variables follow the active page; failed pages leave nothing; commits are all or nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from engine.variables.values import Mutation
from tests.test_storage.support import World, put


async def test_variables_follow_the_active_page(storage) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    await world.turn(main, [put("branch", "day", 1)])
    a = await world.turn(main, [put("branch", "mood", "happy"), put("floor", "scene", "inn")])
    b = await world.regenerate(a.floor.id, [put("branch", "mood", "sad")])
    assert b.page.number == 2
    state = await world.variables.state(main)
    assert state.branch == {"day": 1, "mood": "sad"}
    assert state.floor == {}  # page B wrote no floor variable
    await world.timeline.activate_page(a.floor.id, 1)
    state = await world.variables.state(main)
    assert state.branch == {"day": 1, "mood": "happy"} and state.floor == {"scene": "inn"}
    await world.turn(main, [put("branch", "day", 2)])
    state = await world.variables.state(main)
    assert state.branch == {"day": 2, "mood": "happy"}
    assert (await world.variables.state(main, floor=2)).branch == {"day": 1, "mood": "happy"}
    # Page B's write is not in the history the branch sees; page A's is.
    history = await world.variables.history(main, "mood")
    assert [(h.value, h.floor, h.page) for h in history] == [("happy", 2, 1)]


async def test_swiping_back_and_forth_and_deletes(storage) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    await world.turn(main, [put("branch", "hp", 10), put("branch", "gold", 5)])
    a = await world.turn(main, [Mutation.delete("branch", "gold"), put("branch", "hp", 9)])
    assert (await world.variables.state(main)).branch == {"hp": 9}
    await world.regenerate(a.floor.id, [put("branch", "hp", 3)])
    assert (await world.variables.state(main)).branch == {"hp": 3, "gold": 5}
    for number, expected in [(1, {"hp": 9}), (2, {"hp": 3, "gold": 5}), (1, {"hp": 9})]:
        await world.timeline.activate_page(a.floor.id, number)
        assert (await world.variables.state(main)).branch == expected


async def test_page_and_floor_scopes_belong_to_their_page(storage) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    a = await world.turn(main, [put("page", "draft", "A"), put("floor", "f", "A")])
    await world.regenerate(a.floor.id, [put("page", "draft", "B")])
    state = await world.variables.state(main)
    assert (state.page, state.floor) == ({"draft": "B"}, {})
    await world.timeline.activate_page(a.floor.id, 1)
    state = await world.variables.state(main)
    assert (state.page, state.floor) == ({"draft": "A"}, {"f": "A"})
    assert state.get("draft") == "A" and state.local() == {"draft": "A", "f": "A"}
    # A new page of the floor starts from the state before the floor, not from a page.
    base = await world.variables.base_for(a.floor.id)
    assert (base.page, base.floor, base.branch) == ({}, {}, {})


async def test_global_writes_apply_once_and_swiping_never_rewrites_them(storage) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    a = await world.turn(main, [put("global", "deaths", 1), put("chat", "seen", "a")])
    await world.regenerate(a.floor.id, [put("global", "deaths", 2), put("chat", "seen", "b")])
    await world.timeline.activate_page(a.floor.id, 1)
    state = await world.variables.state(main)
    assert state.global_ == {"deaths": 2} and state.chat == {"seen": "b"}
    assert state.merged()["deaths"] == 2 and "deaths" not in state.local()


async def test_a_failed_floor_leaves_its_staged_writes_nowhere(storage) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    await world.turn(main, [put("branch", "hp", 10)])
    floor = await world.timeline.open_floor(main)
    await world.timeline.start_generating(floor.id)
    page = await world.timeline.add_page(floor.id)
    await world.timeline.fail_page(page.id, "model error")
    state = await world.variables.state(main)
    assert state.branch == {"hp": 10} and state.chat == {} and state.global_ == {}
    assert await world.variables.history(main, "hp") != []
    async with storage.unit_of_work() as uow:
        assert await uow.variables.page_log([page.id], "branch") == {}
        assert await uow.variables.values("page", page.id) == {}
    # And a failed regenerate changes nothing either.
    done = await world.turn(main, [put("branch", "hp", 8)])
    regen = await world.timeline.add_page(done.floor.id)
    await world.timeline.fail_page(regen.id, "timeout")
    assert (await world.variables.state(main)).branch == {"hp": 8}


class _Boom(RuntimeError):
    pass


class _FaultyVariables:
    """Delegates to the real repository, but raises on the first write to ``fail_scope``."""

    def __init__(self, inner: Any, fail_scope: str) -> None:
        self._inner = inner
        self._fail_scope = fail_scope

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def change(self, scope: str, owner_id: int, delta: Any) -> None:
        await self._inner.change(scope, owner_id, delta)
        if scope == self._fail_scope and delta:
            raise _Boom(f"injected failure after writing {scope}")


class _FaultyStorage:
    def __init__(self, inner: Any, fail_scope: str) -> None:
        self._inner = inner
        self._fail_scope = fail_scope

    @asynccontextmanager
    async def unit_of_work(self) -> AsyncIterator[Any]:
        async with self._inner.unit_of_work() as uow:
            uow.variables = _FaultyVariables(uow.variables, self._fail_scope)
            yield uow

    def read(self) -> Any:
        return self._inner.read()


@pytest.mark.parametrize("fail_scope", ["branch", "global"])
async def test_an_exception_inside_a_commit_leaves_no_partial_state(storage, fail_scope) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    await world.turn(main, [put("branch", "hp", 10)])
    floor = await world.timeline.open_floor(main)
    await world.timeline.start_generating(floor.id)
    page = await world.timeline.add_page(floor.id)
    faulty = World(_FaultyStorage(storage, fail_scope))  # type: ignore[arg-type]
    writes = [put("branch", "hp", 1), put("chat", "c", 1), put("global", "g", 1)]
    with pytest.raises(_Boom):
        await faulty.timeline.commit_page(page.id, messages=[], writes=writes)
    assert (await world.history.floor(floor.id)).state == "generating"
    assert [p.status for p in await world.history.pages(floor.id)] == ["pending"]
    state = await world.variables.state(main)
    assert (state.branch, state.chat, state.global_) == ({"hp": 10}, {}, {})
    assert [h.value for h in await world.variables.history(main, "hp")] == [10]
    # The same page can still commit normally afterwards.
    await world.timeline.commit_page(page.id, writes=writes)
    state = await world.variables.state(main)
    assert (state.branch, state.chat, state.global_) == ({"hp": 1}, {"c": 1}, {"g": 1})
