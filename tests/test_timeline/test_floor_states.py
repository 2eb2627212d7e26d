"""Floor and page transitions: the allowed ones work, the others raise typed errors."""

from __future__ import annotations

import pytest

from engine.errors import ConflictError, InvalidTransitionError
from engine.timeline.errors import (
    BranchBusyError,
    FloorTransitionError,
    PageTransitionError,
    StaleStateError,
)
from engine.timeline.service import TimelineService
from engine.timeline.states import FLOOR_TRANSITIONS, check_floor_transition
from engine.timeline.values import FLOOR_STATES, NewMessage
from tests.test_storage.support import World

ALLOWED = {
    ("draft", "generating"),
    ("draft", "failed"),
    ("generating", "committed"),
    ("generating", "failed"),
}


@pytest.mark.parametrize("current", FLOOR_STATES)
@pytest.mark.parametrize("target", FLOOR_STATES)
def test_the_state_table(current: str, target: str) -> None:
    if (current, target) in ALLOWED:
        check_floor_transition(current, target, where="floor 1")  # type: ignore[arg-type]
        assert target in FLOOR_TRANSITIONS[current]  # type: ignore[index]
    else:
        with pytest.raises(FloorTransitionError, match=f"a {current} floor cannot become"):
            check_floor_transition(current, target, where="floor 1")  # type: ignore[arg-type]


async def test_a_turn_moves_draft_generating_committed(storage) -> None:
    world = World(storage)
    opened = await world.session()
    floor = await world.timeline.open_floor(
        opened.main.id, [NewMessage(role="user", raw="hi", speaker_id="u1", speaker_name="Ann")]
    )
    assert (floor.seq, floor.state, floor.active_page) == (1, "draft", None)
    floor = await world.timeline.start_generating(floor.id)
    assert floor.state == "generating"
    page = await world.timeline.add_page(floor.id)
    assert (page.number, page.status) == (1, "pending")
    done = await world.timeline.commit_page(
        page.id, messages=[NewMessage(role="assistant", raw="*waves*", display="waves")]
    )
    assert (done.floor.state, done.floor.active_page, done.page.status) == (
        "committed",
        1,
        "committed",
    )
    view = await world.history.floor_view(opened.main.id, 1)
    assert [m.raw for m in view.inputs] == ["hi"]
    assert view.inputs[0].speaker_name == "Ann"
    assert [(m.raw, m.display, m.role) for m in view.replies] == [
        ("*waves*", "waves", "assistant")
    ]
    assert (await world.history.floor(floor.id)).state == "committed"


async def test_refused_floor_moves_raise_typed_errors(storage) -> None:
    world = World(storage)
    opened = await world.session()
    done = await world.turn(opened.main.id)
    with pytest.raises(FloorTransitionError, match="a committed floor cannot become generating"):
        await world.timeline.start_generating(done.floor.id)
    with pytest.raises(FloorTransitionError, match="a committed floor cannot become failed"):
        await world.timeline.fail_floor(done.floor.id, "late")
    with pytest.raises(PageTransitionError, match="a committed page cannot become committed"):
        await world.timeline.commit_page(done.page.id)
    with pytest.raises(PageTransitionError, match="a committed page cannot become failed"):
        await world.timeline.fail_page(done.page.id, "late")

    floor = await world.timeline.open_floor(opened.main.id)
    page = await world.timeline.add_page(floor.id)
    # A draft floor cannot commit: it has to be generating first.
    with pytest.raises(FloorTransitionError, match="a draft floor cannot become committed"):
        await world.timeline.commit_page(page.id)
    failed = await world.timeline.fail_floor(floor.id, "user left")
    assert failed.state == "failed" and failed.error == "user left"
    assert [p.status for p in await world.history.pages(floor.id)] == ["failed"]
    with pytest.raises(FloorTransitionError, match="a failed floor cannot become generating"):
        await world.timeline.start_generating(floor.id)
    # All refusals are part of the engine tree.
    assert issubclass(FloorTransitionError, InvalidTransitionError)
    assert issubclass(StaleStateError, ConflictError)


async def test_a_failed_floor_keeps_its_number_and_input(storage) -> None:
    world = World(storage)
    opened = await world.session()
    floor = await world.timeline.open_floor(opened.main.id, [NewMessage(role="user", raw="hi")])
    await world.timeline.start_generating(floor.id)
    page = await world.timeline.add_page(floor.id)
    failed = await world.timeline.fail_page(page.id, "model down")
    assert (failed.floor.state, failed.page.status) == ("failed", "failed")
    after = await world.turn(opened.main.id)
    assert after.floor.seq == 2  # issue 12: a failed floor's number is never reused
    assert (await world.history.floor(floor.id)).error == "model down"  # kept for diagnosis
    views = await world.history.history(opened.main.id)
    assert [(v.floor.seq, v.floor.state) for v in views] == [(1, "failed"), (2, "committed")]
    assert [m.raw for m in views[0].inputs] == ["hi"] and views[0].replies == ()
    assert await world.timeline.head(opened.main.id) == 2


async def test_a_failed_latest_floor_is_retried_in_place(storage) -> None:
    world = World(storage)
    opened = await world.session()
    done = await world.turn(opened.main.id)
    floor = await world.timeline.open_floor(opened.main.id, [NewMessage(role="user", raw="x")])
    await world.timeline.fail_floor(floor.id, "interrupted")
    # The older floor is no longer the latest: only the failed one can be regenerated.
    with pytest.raises(PageTransitionError, match="not its branch's latest floor"):
        await world.timeline.add_page(done.floor.id)
    retry = await TimelineService(storage, owner="me").add_page(floor.id)
    moved = await world.history.floor(floor.id)
    assert (retry.number, moved.state, moved.owner) == (1, "generating", "me")
    committed = await world.timeline.commit_page(
        retry.id, messages=[NewMessage(role="assistant", raw="at last")]
    )
    assert (committed.floor.seq, committed.floor.state) == (2, "committed")
    view = await world.history.floor_view(opened.main.id, 2)
    assert [m.raw for m in view.inputs] == ["x"] and [m.raw for m in view.replies] == ["at last"]


async def test_one_generation_per_branch(storage) -> None:
    world = World(storage)
    opened = await world.session()
    floor = await world.timeline.open_floor(opened.main.id)
    with pytest.raises(BranchBusyError, match="floor 1 is still draft"):
        await world.timeline.open_floor(opened.main.id)
    await world.timeline.start_generating(floor.id)
    await world.timeline.add_page(floor.id)
    with pytest.raises(BranchBusyError, match="already has a page being generated"):
        await world.timeline.add_page(floor.id)


async def test_a_failed_regenerate_keeps_the_floor_and_its_page(storage) -> None:
    world = World(storage)
    opened = await world.session()
    done = await world.turn(opened.main.id, text="first")
    page = await world.timeline.add_page(done.floor.id)
    assert page.number == 2
    with pytest.raises(BranchBusyError, match="regenerating"):
        await world.timeline.open_floor(opened.main.id)
    failed = await world.timeline.fail_page(page.id, "timeout")
    assert (failed.floor.state, failed.page.status) == ("committed", "failed")
    view = await world.history.floor_view(opened.main.id, 1)
    assert view.floor.active_page == 1 and [m.raw for m in view.replies] == ["first"]
    with pytest.raises(PageTransitionError, match="page 2 is failed"):
        await world.timeline.activate_page(done.floor.id, 2)


async def test_only_the_latest_floor_regenerates_or_swipes(storage) -> None:
    world = World(storage)
    opened = await world.session()
    first = await world.turn(opened.main.id)
    await world.turn(opened.main.id)
    with pytest.raises(PageTransitionError, match="not its branch's latest floor"):
        await world.timeline.add_page(first.floor.id)
    with pytest.raises(PageTransitionError, match="not its branch's latest floor"):
        await world.timeline.activate_page(first.floor.id, 1)


async def test_a_floor_keeps_every_input_in_order(storage) -> None:
    world = World(storage)
    opened = await world.session()
    said = [NewMessage(role="user", raw="a"), NewMessage(role="user", raw="b")]
    floor = await world.timeline.open_floor(opened.main.id, said)
    await world.timeline.start_generating(floor.id)
    page = await world.timeline.add_page(floor.id)
    await world.timeline.commit_page(page.id)
    view = await world.history.floor_view(opened.main.id, 1)
    assert [(m.raw, m.seq) for m in view.inputs] == [("a", 1), ("b", 2)]


async def test_stale_compare_and_set_is_a_conflict(storage) -> None:
    world = World(storage)
    opened = await world.session()
    floor = await world.timeline.open_floor(opened.main.id)
    async with storage.unit_of_work() as uow:
        assert await uow.floors.compare_and_set(floor.id, expected="draft", state="generating")
        assert not await uow.floors.compare_and_set(floor.id, expected="draft", state="failed")
    assert (await world.history.floor(floor.id)).state == "generating"
