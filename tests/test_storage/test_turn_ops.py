"""The storage operations a turn uses to save round trips, on SQLite and PostgreSQL:
session with branches, several assets, the latest floor with its pending flag, a floor opened
straight into generating, history windows, and the one-unit open + known-context commit."""

from __future__ import annotations

import pytest

from adapters.storage import SqlStorage
from engine.errors import NotFoundError
from engine.ports import LatestFloor
from engine.timeline.errors import BranchBusyError, StaleStateError
from engine.timeline.opening import OpenedFloor, open_generating
from engine.timeline.values import NewMessage, PageContext
from tests.test_storage.support import World, put

pytestmark = pytest.mark.asyncio


def said(text: str) -> NewMessage:
    return NewMessage(role="user", raw=text, speaker_id="u1", speaker_name="Ann")


async def test_session_with_branches_in_one_read(storage: SqlStorage) -> None:
    world = World(storage)
    opened = await world.session()
    await world.turn(opened.main.id)
    fork = await world.timeline.fork(opened.main.id, name="alt")
    async with storage.read() as uow:
        session, branches = await uow.sessions.get_with_branches(opened.session.id)
        assert session == await uow.sessions.get(opened.session.id)
        assert branches == await uow.branches.list(opened.session.id)
        assert [b.name for b in branches] == ["main", "alt"]
        assert branches[1].id == fork.id
        with pytest.raises(NotFoundError):
            await uow.sessions.get_with_branches(opened.session.id + 999)


async def test_assets_by_kind_and_name_in_one_read(storage: SqlStorage) -> None:
    world = World(storage)
    opened = await world.session()
    other = await world.session("elsewhere", realm="other-guild")
    realm = opened.realm.id
    async with storage.unit_of_work() as uow:
        await uow.assets.put(realm_id=realm, kind="card", name="Seraphina", data={"a": 1})
        await uow.assets.put(realm_id=realm, kind="preset", name="Seraphina", data={"b": 2})
        await uow.assets.put(realm_id=realm, kind="worldbook", name="lore", data={"c": 3})
        await uow.assets.put(realm_id=other.realm.id, kind="card", name="Other", data={})
    async with storage.read() as uow:
        found = await uow.assets.get_many(
            realm,
            [
                ("card", "Seraphina"),
                ("worldbook", "lore"),
                ("regex", "missing"),
                ("card", "Other"),
            ],
        )
        assert sorted((a.kind, a.name, dict(a.data)) for a in found) == [
            ("card", "Seraphina", {"a": 1}),
            ("worldbook", "lore", {"c": 3}),
        ]
        assert await uow.assets.get_many(realm, []) == []


async def test_latest_floor_with_its_pending_and_writes_flags(storage: SqlStorage) -> None:
    world = World(storage)
    opened = await world.session()
    branch = opened.main.id
    async with storage.read() as uow:
        assert await uow.floors.latest_for_open(branch) == LatestFloor(
            floor=None, pending=False, next_floor_writes=True
        )
    ctx = await world.turn(branch)
    async with storage.read() as uow:
        found = await uow.floors.latest_for_open(branch)
    assert found.floor is not None and found.floor.id == ctx.floor.id
    assert (found.pending, found.next_floor_writes) == (False, False)
    await world.variables.set(branch, "branch", "coins", 3)  # another scope: not counted
    page = await world.timeline.add_page(ctx.floor.id)
    async with storage.read() as uow:
        found = await uow.floors.latest_for_open(branch)
    assert found.floor is not None and found.floor.id == ctx.floor.id
    assert (found.pending, found.next_floor_writes) == (True, False)
    await world.timeline.fail_page(page.id, "no")
    failed = await world.timeline.open_floor(branch, [said("x")])
    await world.variables.set(branch, "floor", "weather", "rain")  # placed on the open floor
    await world.timeline.fail_floor(failed.id, "gone")
    async with storage.read() as uow:  # a failed floor is never the latest
        found = await uow.floors.latest_for_open(branch)
    assert found.floor is not None and found.floor.id == ctx.floor.id
    assert (found.pending, found.next_floor_writes) == (False, True)
    # Issue 12: the failed floor keeps its number (and its floor scope); a floor write made
    # now waits for the next floor, which comes after it.
    await world.variables.set(branch, "floor", "wind", "cold")
    new = await _open(storage, branch, "next")
    assert (new.floor.seq, dict(new.floor_scope)) == (3, {"wind": "cold"})
    async with storage.read() as uow:  # materialised for the new floor
        assert await uow.variables.values("floor", new.floor.id) == {"wind": "cold"}


async def test_open_generating_creates_floor_page_and_inputs(storage: SqlStorage) -> None:
    world = World(storage)
    opened = await world.session()
    await world.turn(opened.main.id)
    async with storage.unit_of_work() as uow:
        floor, page = await uow.floors.open_generating(
            branch_id=opened.main.id, seq=2, inputs=[said("one"), said("two")]
        )
    assert (floor.seq, floor.state, floor.active_page) == (2, "generating", None)
    assert (page.floor_id, page.number, page.status, dict(page.meta)) == (
        floor.id,
        1,
        "pending",
        {},
    )
    async with storage.read() as uow:
        assert await uow.floors.get(floor.id) == floor
        assert await uow.pages.get(page.id) == page
        stored = await uow.messages.of_floors([floor.id])
    assert [(m.seq, m.raw, m.page_id, m.speaker_name) for m in stored] == [
        (1, "one", None, "Ann"),
        (2, "two", None, "Ann"),
    ]


async def test_history_window_reads(storage: SqlStorage) -> None:
    world = World(storage)
    opened = await world.session()
    main = opened.main.id
    first = await world.turn(main, text="r1")
    second = await world.turn(main, text="r2")
    again = await world.regenerate(second.floor.id, text="r2b")
    async with storage.unit_of_work() as uow:
        await uow.pages.compare_and_set(
            again.page.id, expected="committed", status="committed", meta={"timed_state": {"x": 1}}
        )
    fork = await world.timeline.fork(main, name="alt", after_floor=1)
    third = await world.turn(fork.id, text="f2")
    draft = await world.timeline.open_floor(fork.id, [said("waiting")])
    async with storage.read() as uow:
        rows = await uow.floors.window([(main, 1, 2)], meta_seq=2)
        both = await uow.floors.window([(main, 1, 1), (fork.id, 2, 5)], meta_seq=None)
        messages = await uow.messages.window([first.floor.id, second.floor.id, draft.id])
        full = await uow.messages.of_floors([first.floor.id, second.floor.id, draft.id])
        assert await uow.floors.window([]) == []
        assert await uow.messages.window([]) == []
    assert [(r.seq, r.number, r.active_page) for r in rows] == [(1, 1, 1), (2, 1, 2), (2, 2, 2)]
    assert [r.meta for r in rows] == [None, {}, {"timed_state": {"x": 1}}]
    assert [(r.floor_id, r.page_id, r.branch_id) for r in rows][0] == (
        first.floor.id,
        first.page.id,
        main,
    )
    # Spans over two branches; the fork's draft floor is not committed, so not in the window.
    assert [(r.branch_id, r.seq) for r in both] == [(main, 1), (fork.id, 2)]
    assert both[1].floor_id == third.floor.id and all(r.meta is None for r in both)
    assert [
        (m.floor_id, m.page_id, m.role, m.speaker_name, m.raw, m.hidden) for m in messages
    ] == [(m.floor_id, m.page_id, m.role, m.speaker_name, m.raw, m.hidden) for m in full]
    assert [m.raw for m in messages] == ["say r1", "r1", "say r2", "r2", "r2b", "waiting"]


async def _open(storage: SqlStorage, branch_id: int, text: str) -> OpenedFloor:
    async with storage.unit_of_work() as uow:
        session_id = (await uow.branches.get(branch_id)).session_id
        _, branches = await uow.sessions.get_with_branches(session_id)
        branch = next(b for b in branches if b.id == branch_id)
        return await open_generating(uow, branch, branches, [said(text)])


async def test_open_generating_in_one_unit_then_commit_with_known_context(
    storage: SqlStorage,
) -> None:
    world = World(storage)
    opened = await world.session()
    main = opened.main.id
    await world.variables.set(main, "floor", "weather", "rain")
    new = await _open(storage, main, "hello")
    assert (new.floor.seq, new.floor.state, new.page.number) == (1, "generating", 1)
    assert dict(new.floor_scope) == {"weather": "rain"}
    with pytest.raises(BranchBusyError):  # the floor is generating
        await _open(storage, main, "again")
    known = PageContext(
        page=new.page, floor=new.floor, branch=opened.main, realm_id=opened.realm.id
    )
    committed = await world.timeline.commit_page(
        new.page.id,
        messages=[NewMessage(role="assistant", raw="hi")],
        writes=[put("branch", "mood", "calm")],
        known=known,
    )
    assert committed.floor.state == "committed" and committed.floor.active_page == 1
    assert (await world.variables.state(main)).branch == {"mood": "calm"}
    views = await world.history.history(main)
    assert [m.raw for v in views for m in (*v.inputs, *v.replies)] == ["hello", "hi"]
    # A second commit with the same (now stale) context loses the compare-and-set.
    with pytest.raises(StaleStateError):
        await world.timeline.commit_page(new.page.id, known=known)
    page = await world.timeline.add_page(committed.floor.id)
    with pytest.raises(BranchBusyError):  # a regenerate is pending on the latest floor
        await _open(storage, main, "later")
    await world.timeline.fail_page(page.id, "no")
    after = await _open(storage, main, "later")
    assert after.floor.seq == 2
