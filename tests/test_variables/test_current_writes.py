"""A player's floor and page writes (``current``) land on the floor they see, at once."""

from __future__ import annotations

import pytest

from engine.timeline.errors import TimelineNotFoundError
from tests.test_storage.support import World, put


async def test_floor_and_page_writes_land_on_the_latest_floor_now(storage) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    done = await world.turn(main, [put("floor", "weather", "rain"), put("page", "p", 1)])
    await world.variables.set(main, "floor", "lamp", "on", current=True)
    await world.variables.set(main, "floor", "weather", "fog", current=True)
    await world.variables.set(main, "page", "mark", "x", current=True)
    state = await world.variables.state(main)
    assert state.floor == {"weather": "fog", "lamp": "on"}
    assert state.page == {"p": 1, "mark": "x"}
    history = await world.variables.history(main, "weather")
    assert [(h.value, h.source, h.floor, h.page) for h in history] == [
        ("rain", "page", 1, 1),
        ("fog", "explicit", 1, 1),
    ]
    # The write belongs to page 1: another page of the floor does not have it, and swiping
    # back brings it again, after the page's own writes.
    await world.regenerate(done.floor.id, [put("floor", "weather", "snow")])
    assert (await world.variables.state(main)).floor == {"weather": "snow"}
    await world.timeline.activate_page(done.floor.id, 1)
    state = await world.variables.state(main)
    assert state.floor == {"weather": "fog", "lamp": "on"}
    assert state.page == {"p": 1, "mark": "x"}
    # The next floor starts without them, as floor and page scopes do.
    await world.turn(main)
    state = await world.variables.state(main)
    assert state.floor == {} and state.page == {}


async def test_a_fork_writes_on_the_floor_it_shares_and_deletes_too(storage) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    await world.turn(main, [put("floor", "a", 1)])
    fork = await world.timeline.fork(main, name="side")
    await world.variables.set(fork.id, "floor", "b", 2, current=True)
    await world.variables.delete(fork.id, "floor", "a", current=True)
    assert (await world.variables.state(fork.id)).floor == {"b": 2}
    assert [h.deleted for h in await world.variables.history(fork.id, "a")] == [False, True]


async def test_an_empty_branch_has_no_floor_to_write_on(storage) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    for scope in ("floor", "page"):
        with pytest.raises(TimelineNotFoundError, match="has no floor yet"):
            await world.variables.set(main, scope, "x", 1, current=True)  # type: ignore[arg-type]
