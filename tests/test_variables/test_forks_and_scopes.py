"""Forks see their fork floor's state and stay isolated; chat is shared; realms are walled."""

from __future__ import annotations

import pytest

from engine.timeline.errors import DuplicateNameError, PageTransitionError, TimelineNotFoundError
from engine.variables.store import SNAPSHOT_EVERY
from tests.test_storage.support import World, put


async def test_a_fork_after_floor_3_sees_floor_3_and_stays_isolated(storage) -> None:
    world = World(storage)
    opened = await world.session()
    main = opened.main.id
    for n in range(1, 6):
        await world.turn(main, [put("branch", "n", n), put("branch", f"at{n}", True)])
    fork = await world.timeline.fork(main, name="what-if", after_floor=3)
    assert (fork.fork_floor, fork.fork_page) == (3, 1)
    assert (await world.variables.state(fork.id)).branch == {
        "n": 3,
        "at1": True,
        "at2": True,
        "at3": True,
    }
    assert await world.timeline.head(fork.id) == 3

    first = await world.turn(fork.id, [put("branch", "n", 40), put("branch", "forked", 1)])
    assert first.floor.seq == 4
    await world.turn(main, [put("branch", "n", 6), put("branch", "main_only", 1)])
    fork_state = (await world.variables.state(fork.id)).branch
    main_state = (await world.variables.state(main)).branch
    assert fork_state["n"] == 40 and "main_only" not in fork_state and "at4" not in fork_state
    assert main_state["n"] == 6 and "forked" not in main_state

    # Chat scope is the session's: both branches see each other's chat writes.
    await world.turn(fork.id, [put("chat", "weather", "rain")])
    await world.variables.set(main, "chat", "season", "autumn")
    for branch in (main, fork.id):
        assert (await world.variables.state(branch)).chat == {
            "weather": "rain",
            "season": "autumn",
        }

    # History along the fork: floors 1-3 from main, then its own.
    views = await world.history.history(fork.id)
    assert [(v.floor.seq, v.branch_name) for v in views] == [
        (1, "main"),
        (2, "main"),
        (3, "main"),
        (4, "what-if"),
        (5, "what-if"),
    ]


async def test_a_fork_keeps_the_page_it_saw_when_the_parent_swipes(storage) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    a = await world.turn(main, [put("branch", "mood", "happy"), put("floor", "f", "A")])
    await world.regenerate(a.floor.id, [put("branch", "mood", "sad")])
    fork = await world.timeline.fork(main, name="sad-path")
    assert fork.fork_page == 2
    await world.timeline.activate_page(a.floor.id, 1)
    assert (await world.variables.state(main)).branch == {"mood": "happy"}
    state = await world.variables.state(fork.id)
    assert state.branch == {"mood": "sad"} and state.floor == {}
    view = (await world.history.history(fork.id))[-1]
    assert view.floor.active_page == 2
    # A fork has no floor of its own yet, so there is nothing of its own to swipe.
    assert await world.history.latest_floor(fork.id) is None


async def test_fork_refusals(storage) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    await world.turn(main)
    with pytest.raises(TimelineNotFoundError, match="no committed floor 2 to fork after"):
        await world.timeline.fork(main, name="x", after_floor=2)
    await world.timeline.fork(main, name="x", after_floor=0)
    with pytest.raises(DuplicateNameError, match="'x' already exists"):
        await world.timeline.fork(main, name="x")
    empty = await world.timeline.branch((await world.session()).session.id, "x")
    assert (await world.variables.state(empty.id)).branch == {}
    assert await world.timeline.head(empty.id) == 0


async def test_forks_of_forks_and_snapshot_boundaries(storage) -> None:
    """Reads at any floor agree with a plain replay, across snapshot boundaries and forks."""
    world = World(storage)
    main = (await world.session()).main.id
    total = SNAPSHOT_EVERY + 6
    for n in range(1, total + 1):
        writes = [put("branch", "n", n), put("branch", f"k{n % 3}", n)]
        if n % 5 == 0:
            await world.variables.set(main, "branch", "explicit", n)
        await world.turn(main, writes)

    def expected(upto: int) -> dict[str, int]:
        state: dict[str, int] = {}
        for n in range(1, upto + 1):
            if n % 5 == 0:
                state["explicit"] = n
            state["n"] = n
            state[f"k{n % 3}"] = n
        return state

    for at in (1, 4, SNAPSHOT_EVERY - 1, SNAPSHOT_EVERY, SNAPSHOT_EVERY + 1, total):
        assert (await world.variables.state(main, floor=at)).branch == expected(at), at
    fork = await world.timeline.fork(main, name="f1", after_floor=SNAPSHOT_EVERY + 2)
    await world.turn(fork.id, [put("branch", "n", -1)])
    grand = await world.timeline.fork(fork.id, name="f2")
    assert grand.parent_id == fork.id
    assert (await world.variables.state(grand.id)).branch == {
        **expected(SNAPSHOT_EVERY + 2),
        "n": -1,
    }
    deep = await world.timeline.fork(fork.id, name="f3", after_floor=3)
    assert deep.parent_id == main  # floor 3 of f1 is main's floor
    assert (await world.variables.state(deep.id)).branch == expected(3)


async def test_realm_globals_are_walled_off(storage) -> None:
    world = World(storage)
    a = await world.session("chan-a", realm="realm-a")
    a2 = await world.session("chan-a2", realm="realm-a")
    b = await world.session("chan-b", realm="realm-b")
    assert a.realm.id == a2.realm.id != b.realm.id
    await world.turn(a.main.id, [put("global", "secret", "A")])
    await world.variables.set(b.main.id, "global", "other", "B")
    assert (await world.variables.state(a2.main.id)).global_ == {"secret": "A"}
    assert (await world.variables.state(b.main.id)).global_ == {"other": "B"}
    assert await world.variables.history(b.main.id, "secret") == []
    # Chat scope is per session, even inside one realm.
    await world.variables.set(a.main.id, "chat", "c", 1)
    assert (await world.variables.state(a2.main.id)).chat == {}


async def test_explicit_writes_to_every_scope(storage) -> None:
    world = World(storage)
    main = (await world.session()).main.id
    done = await world.turn(main, [put("branch", "hp", 10)])
    await world.variables.set(main, "branch", "hp", 12)
    await world.variables.set(main, "floor", "weather", "fog")  # waits for the next floor
    # Swiping the head floor keeps an explicit write made after it.
    await world.regenerate(done.floor.id, [put("branch", "mp", 1)])
    assert (await world.variables.state(main)).branch == {"hp": 12, "mp": 1}
    floor = await world.timeline.open_floor(main)
    assert (await world.variables.state(main)).floor == {}  # the head is still floor 1
    assert (await world.variables.base_for(floor.id)).floor == {"weather": "fog"}
    await world.timeline.start_generating(floor.id)
    page = await world.timeline.add_page(floor.id)
    await world.variables.set(main, "page", "note", "x", page_id=page.id)
    await world.variables.set(main, "floor", "lamp", "on")  # the open floor gets it now
    await world.timeline.commit_page(page.id, writes=[put("page", "note2", "y")])
    state = await world.variables.state(main)
    assert state.page == {"note": "x", "note2": "y"}
    assert state.floor == {"weather": "fog", "lamp": "on"}
    with pytest.raises(PageTransitionError, match="only while it generates"):
        await world.variables.set(main, "page", "late", 1, page_id=page.id)
    with pytest.raises(PageTransitionError, match="needs the pending page"):
        await world.variables.set(main, "page", "late", 1)
    await world.variables.delete(main, "branch", "hp")
    assert (await world.variables.state(main)).branch == {"mp": 1}
    history = await world.variables.history(main, "hp")
    # Page 1 of floor 1 (hp=10) is no longer active, so its write is not in this history.
    assert [(h.value, h.deleted, h.source, h.floor) for h in history] == [
        (12, False, "explicit", 2),
        (None, True, "explicit", 3),
    ]
