"""Refusals name floors, pages, branches and sessions as users know them (floor and page
numbers, branch names), never database ids, and are of the kind they say."""

from __future__ import annotations

import pytest

from engine.errors import EngineError, InvalidTransitionError, LimitExceededError
from engine.timeline.checks import MAX_INPUTS_PER_FLOOR
from engine.timeline.errors import InvalidNameError, TimelineNotFoundError
from engine.timeline.values import NewMessage
from engine.variables.values import MAX_WRITES_PER_PAGE, Mutation, UnknownScopeError
from tests.test_storage.support import World, put


async def _second_session(world: World) -> int:
    """The main branch of a second session: its row id (2) is not its name (``main``)."""
    await world.session("first")
    return (await world.session("second")).main.id


async def test_the_write_cap_names_the_floor_and_page_numbers(storage) -> None:
    world = World(storage)
    main = await _second_session(world)
    await world.turn(main)
    floor = await world.timeline.open_floor(main)
    await world.timeline.start_generating(floor.id)
    page = await world.timeline.add_page(floor.id)
    assert (floor.seq, page.number) != (floor.id, page.id)  # ids and numbers differ here
    writes = [put("branch", "k", n) for n in range(MAX_WRITES_PER_PAGE + 1)]
    with pytest.raises(LimitExceededError) as caught:
        await world.timeline.commit_page(page.id, writes=writes)
    assert str(caught.value).startswith(f"floor {floor.seq} page {page.number}: ")
    assert caught.value.limit == "MAX_WRITES_PER_PAGE"


async def test_the_input_cap_names_the_branch(storage) -> None:
    world = World(storage)
    main = await _second_session(world)
    too_many = [NewMessage(role="user", raw="x")] * (MAX_INPUTS_PER_FLOOR + 1)
    with pytest.raises(LimitExceededError) as caught:
        await world.timeline.open_floor(main, too_many)
    assert str(caught.value).startswith("branch 'main': ")
    assert caught.value.limit == "MAX_INPUTS_PER_FLOOR"


async def test_a_missing_branch_is_named_without_the_session_id(storage) -> None:
    world = World(storage)
    await _second_session(world)
    opened = await world.session("second")
    with pytest.raises(TimelineNotFoundError) as caught:
        await world.timeline.branch(opened.session.id, "nope")
    assert str(caught.value) == "this session has no branch named 'nope'"


async def test_an_unknown_scope_is_bad_input_not_a_page_transition(storage) -> None:
    world = World(storage)
    opened = await world.session()
    odd = Mutation(op="set", scope="nowhere", key="k", value=1)  # type: ignore[arg-type]
    with pytest.raises(UnknownScopeError) as caught:
        await world.variables.write(opened.main.id, odd)
    assert not isinstance(caught.value, InvalidTransitionError)
    assert isinstance(caught.value, ValueError)  # a tool call reports it to the model
    assert str(caught.value) == (
        "unknown variable scope 'nowhere' (one of page, floor, branch, chat, global)"
    )
    floor = await world.timeline.open_floor(opened.main.id)
    await world.timeline.start_generating(floor.id)
    page = await world.timeline.add_page(floor.id)
    with pytest.raises(UnknownScopeError, match="floor 1 page 1: unknown variable scope"):
        await world.timeline.commit_page(page.id, writes=[odd])
    await world.timeline.commit_page(page.id)  # nothing was stored or lost: it still commits


async def test_an_invalid_name_is_a_timeline_error(storage) -> None:
    world = World(storage)
    opened = await world.session()
    with pytest.raises(InvalidNameError, match="branch name must not be empty"):
        await world.timeline.fork(opened.main.id, name="  ")
    assert issubclass(InvalidNameError, EngineError)
