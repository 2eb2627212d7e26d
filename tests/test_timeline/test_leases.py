"""Process leases: recovery fails only the turns of processes that are dead (issue 12: a second
process must never fail a live process's turn), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import socket
from datetime import UTC, datetime, timedelta

import pytest

from engine.timeline.leases import (
    LEASE_EXPIRY_S,
    LEASE_HEARTBEAT_S,
    MAX_HOST_CHARS,
    LeaseKeeper,
    pid_running,
    this_host,
)
from engine.timeline.service import INTERRUPTED, TimelineService
from engine.timeline.values import NewMessage
from tests.test_storage.support import World


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.at = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


def keeper(storage, clock: Clock, *, pid: int, running: set[int]) -> LeaseKeeper:
    return LeaseKeeper(storage, clock=clock, host="box", pid=pid, running=running.__contains__)


async def _generating(storage, owner: LeaseKeeper, branch_id: int, text: str) -> tuple[int, int]:
    timeline = TimelineService(storage, owner=owner.owner)
    floor = await timeline.open_floor(branch_id, [NewMessage(role="user", raw=text)])
    await timeline.start_generating(floor.id)
    page = await timeline.add_page(floor.id)
    assert floor.owner == owner.owner and page.owner == owner.owner
    return floor.id, page.id


async def test_a_live_process_keeps_its_turn_and_a_dead_one_loses_it(storage) -> None:
    world = World(storage)
    clock = Clock()
    running = {100, 200}
    first = keeper(storage, clock, pid=100, running=running)
    second = keeper(storage, clock, pid=200, running=running)
    await first.renew()
    main = (await world.session()).main.id
    floor_id, page_id = await _generating(storage, first, main, "hello")

    # The second process starts while the first generates: nothing of the first fails.
    await second.renew()
    assert await world.timeline.recover(second) == []
    assert (await world.history.floor(floor_id)).state == "generating"
    # The first process commits the reply the model sent.
    committed = await TimelineService(storage, owner=first.owner).commit_page(
        page_id, messages=[NewMessage(role="assistant", raw="hi")]
    )
    assert committed.floor.state == "committed"

    # The first process hangs: its lease runs out, and only then its next turn fails.
    floor_id, _ = await _generating(storage, first, main, "again")
    clock.advance(LEASE_EXPIRY_S - 1)
    await second.renew()
    assert await world.timeline.recover(second) == []
    clock.advance(2)
    failed = await world.timeline.recover(second)
    assert [(f.id, f.error) for f in failed] == [(floor_id, INTERRUPTED)]
    assert [p.status for p in await world.history.pages(floor_id)] == ["failed"]


async def test_a_process_gone_from_this_host_is_dead_before_its_lease_expires(storage) -> None:
    world = World(storage)
    clock = Clock()
    running = {100, 300}
    crashed = keeper(storage, clock, pid=100, running=running)
    elsewhere = LeaseKeeper(
        storage, clock=clock, host="other", pid=100, running=running.__contains__
    )
    await crashed.renew()
    await elsewhere.renew()
    main = (await world.session("a")).main.id
    other = (await world.session("b")).main.id
    mine, _ = await _generating(storage, crashed, main, "one")
    theirs, _ = await _generating(storage, elsewhere, other, "two")
    running.discard(100)  # SIGKILL: the process id no longer runs on this host
    restarted = keeper(storage, clock, pid=300, running=running)
    await restarted.renew()
    failed = await world.timeline.recover(restarted)
    # The same pid on another host says nothing about that host's process: it keeps its turn.
    assert [f.id for f in failed] == [mine]
    assert (await world.history.floor(theirs)).state == "generating"


async def test_owners_without_a_lease_and_rows_from_before_leases_are_dead(storage) -> None:
    world = World(storage)
    clock = Clock()
    running = {1}
    stopped = keeper(storage, clock, pid=1, running=running)
    await stopped.renew()
    main = (await world.session("a")).main.id
    old = (await world.session("b")).main.id
    stopped_floor, _ = await _generating(storage, stopped, main, "one")
    legacy = await world.timeline.open_floor(old, [NewMessage(role="user", raw="legacy")])
    assert legacy.owner is None
    await stopped.release()  # a clean stop gives the lease up
    me = keeper(storage, clock, pid=2, running=running | {2})
    failed = await world.timeline.recover(me)
    assert sorted(f.id for f in failed) == sorted([stopped_floor, legacy.id])


async def test_a_regenerate_of_a_live_process_is_left_alone(storage) -> None:
    world = World(storage)
    clock = Clock()
    running = {1, 2}
    first = keeper(storage, clock, pid=1, running=running)
    await first.renew()
    main = (await world.session()).main.id
    done = await world.turn(main)
    regen = await TimelineService(storage, owner=first.owner).add_page(done.floor.id)
    second = keeper(storage, clock, pid=2, running=running)
    await second.renew()
    await world.timeline.recover(second)
    assert [p.status for p in await world.history.pages(done.floor.id)] == ["committed", "pending"]
    running.discard(1)
    await world.timeline.recover(second)
    pages = await world.history.pages(done.floor.id)
    assert [(p.number, p.status) for p in pages] == [(1, "committed"), (regen.number, "failed")]


async def test_the_heartbeat_renews_and_sweeps_until_cancelled(storage) -> None:
    clock = Clock()
    lease = LeaseKeeper(storage, clock=clock, heartbeat_s=0.01, expiry_s=1.0)
    swept = asyncio.Event()
    beats: list[datetime] = []

    async def sweep() -> None:
        async with storage.read() as uow:
            (found,) = await uow.leases.of_owners([lease.owner])
        beats.append(found.heartbeat_at)
        clock.advance(5)
        if len(beats) == 2:
            swept.set()

    task = asyncio.create_task(lease.keep(sweep))
    await asyncio.wait_for(swept.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert beats[1] - beats[0] == timedelta(seconds=5)  # each beat renewed at the clock's time


def test_the_lease_limits_are_named_and_checked() -> None:
    assert 0 < LEASE_HEARTBEAT_S < LEASE_EXPIRY_S
    with pytest.raises(ValueError, match="below the expiry"):
        LeaseKeeper(None, clock=Clock(), heartbeat_s=LEASE_EXPIRY_S)  # type: ignore[arg-type]
    assert pid_running(0) is False


def test_the_host_names_the_process_id_namespace_too(monkeypatch: pytest.MonkeyPatch) -> None:
    host = this_host()
    assert host.startswith(socket.gethostname()) and len(host) <= MAX_HOST_CHARS
    assert pid_running(os.getpid())
    monkeypatch.setattr(socket, "gethostname", lambda: "h" * (MAX_HOST_CHARS + 50))
    assert this_host() == "h" * MAX_HOST_CHARS  # stored in a column of that size
