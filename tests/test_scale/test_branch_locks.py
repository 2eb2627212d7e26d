"""PostgreSQL advisory locks keep a branch's turns in order across processes.

Each :class:`AdvisoryBranchLocks` stands for one process (its own connection pool and its own
in-process queue); the waits are observed in ``pg_locks``, never timed."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from adapters.storage import create_engine
from adapters.storage.branch_locks import (
    MAX_LOCK_CONNECTIONS,
    AdvisoryBranchLocks,
    branch_key,
    branch_order_for,
)
from engine.turns.locks import BranchLocks

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(60)]
WAIT_S = 20.0
"""Upper bound for something the test waits for (never a speed claim)."""


def test_the_key_is_stable_signed_64_bit_and_tells_branches_apart() -> None:
    key = branch_key(7, "main")
    assert key == branch_key(7, "main")
    assert -(2**63) <= key < 2**63
    assert len({branch_key(7, "main"), branch_key(7, "b2"), branch_key(8, "main")}) == 3
    # the separator keeps (1, "1x") and (11, "x") apart
    assert branch_key(1, "1x") != branch_key(11, "x")


def test_a_pool_needs_a_connection() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        AdvisoryBranchLocks("postgresql+asyncpg://u@127.0.0.1/db", max_connections=0)
    assert MAX_LOCK_CONNECTIONS >= 1


class Probe:
    """Reads ``pg_locks`` for one branch key."""

    def __init__(self, pg_url: str) -> None:
        self.engine = create_engine(pg_url)

    async def locks(self, key: int) -> list[tuple[int, bool]]:
        """(backend pid, granted) of every advisory lock request on ``key``."""
        unsigned = key % 2**64
        sql = text(
            "SELECT pid, granted FROM pg_locks WHERE locktype = 'advisory' "
            "AND classid = :hi AND objid = :lo AND objsubid = 1 "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        async with self.engine.connect() as conn:
            rows = await conn.execute(sql, {"hi": unsigned >> 32, "lo": unsigned & 0xFFFFFFFF})
            return [(row.pid, row.granted) for row in rows]

    async def until_waiting(self, key: int, count: int) -> None:
        """Wait until ``count`` requests on ``key`` queue in PostgreSQL."""
        async with asyncio.timeout(WAIT_S):
            while True:  # PostgreSQL's queue gives nothing to await: look again and again
                if sum(not granted for _, granted in await self.locks(key)) >= count:
                    return
                await asyncio.sleep(0.02)

    async def state(self, pid: int) -> str:
        async with self.engine.connect() as conn:
            found = await conn.execute(
                text("SELECT state FROM pg_stat_activity WHERE pid = :pid"), {"pid": pid}
            )
            return str(found.scalar_one())


@pytest.fixture
async def probe(pg_url: str) -> AsyncIterator[Probe]:
    made = Probe(pg_url)
    yield made
    await made.engine.dispose()


@pytest.fixture
async def processes(pg_url: str) -> AsyncIterator[list[AdvisoryBranchLocks]]:
    """Three lock holders, each as a separate process would have."""
    made = [AdvisoryBranchLocks(pg_url) for _ in range(3)]
    yield made
    for locks in made:
        await locks.aclose()


def session() -> int:
    """A session id no other test run uses at the same time (keys are per database)."""
    return random.randrange(1, 2**31)


async def test_turns_of_one_branch_queue_in_order_across_processes(
    processes: list[AdvisoryBranchLocks], probe: Probe
) -> None:
    sid = session()
    key = branch_key(sid, "main")
    order: list[str] = []
    first_in = asyncio.Event()
    release_first = asyncio.Event()

    async def turn(locks: AdvisoryBranchLocks, name: str, gate: asyncio.Event | None) -> None:
        async with locks.hold(sid, "main"):
            order.append(name)
            if gate is not None:
                first_in.set()
                await gate.wait()

    a = asyncio.create_task(turn(processes[0], "a", release_first))
    await first_in.wait()
    (holder, granted), *_ = await probe.locks(key)
    assert granted
    # held across the "model call" without a transaction open on the lock's connection
    assert await probe.state(holder) == "idle"
    b = asyncio.create_task(turn(processes[1], "b", None))
    await probe.until_waiting(key, 1)
    c = asyncio.create_task(turn(processes[2], "c", None))
    await probe.until_waiting(key, 2)
    assert order == ["a"]
    release_first.set()
    await asyncio.wait_for(asyncio.gather(a, b, c), WAIT_S)
    assert order == ["a", "b", "c"]
    assert await probe.locks(key) == []


async def test_different_branches_run_in_parallel(
    processes: list[AdvisoryBranchLocks], probe: Probe
) -> None:
    sid = session()
    async with processes[0].hold(sid, "main"):
        async with asyncio.timeout(WAIT_S), processes[1].hold(sid, "other"):
            assert [g for _, g in await probe.locks(branch_key(sid, "other"))] == [True]
        assert [g for _, g in await probe.locks(branch_key(sid, "main"))] == [True]


async def test_a_cancelled_waiter_leaves_nothing_held(
    processes: list[AdvisoryBranchLocks], probe: Probe
) -> None:
    sid = session()
    key = branch_key(sid, "main")
    entered = asyncio.Event()

    async def wait_in(locks: AdvisoryBranchLocks) -> None:
        async with locks.hold(sid, "main"):
            entered.set()

    async with processes[0].hold(sid, "main"):
        waiter = asyncio.create_task(wait_in(processes[1]))
        await probe.until_waiting(key, 1)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert not entered.is_set()
        # only the holder is left: the cancelled request is gone from PostgreSQL's queue
        assert [g for _, g in await probe.locks(key)] == [True]
        assert not processes[1].busy(sid, "main")
    assert await probe.locks(key) == []
    # the process whose waiter was cancelled takes the branch again at once
    async with asyncio.timeout(WAIT_S), processes[1].hold(sid, "main"):
        assert [g for _, g in await probe.locks(key)] == [True]
    assert await probe.locks(key) == []


async def test_one_process_uses_at_most_its_connections(pg_url: str, probe: Probe) -> None:
    sid = session()
    locks = AdvisoryBranchLocks(pg_url, max_connections=1)
    try:
        second_in = asyncio.Event()

        async def second() -> None:
            async with locks.hold(sid, "two"):
                second_in.set()

        async with locks.hold(sid, "one"):
            task = asyncio.create_task(second())
            # the second branch waits for the one connection here, not in PostgreSQL
            for _ in range(20):
                await asyncio.sleep(0)
            assert not second_in.is_set()
            assert await probe.locks(branch_key(sid, "two")) == []
        await asyncio.wait_for(task, WAIT_S)
        assert second_in.is_set()
    finally:
        await locks.aclose()


async def test_the_order_follows_the_database(pg_url: str) -> None:
    pg = create_engine(pg_url)
    sqlite = create_engine("sqlite+aiosqlite:///:memory:")
    try:
        on_pg = branch_order_for(pg)
        assert isinstance(on_pg, AdvisoryBranchLocks)
        await on_pg.aclose()
        assert isinstance(branch_order_for(sqlite), BranchLocks)
    finally:
        await pg.dispose()
        await sqlite.dispose()
