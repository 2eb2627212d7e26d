"""Job leases that cannot overlap: a job's timeout is shorter than its lease, and a running job
renews its lease (a heartbeat) so no other worker takes it over while it runs.

The heartbeat's pause is handed to the test (:class:`Beats`): each renewal happens when the test
releases it, with the test's clock, so nothing here depends on how fast the machine is.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from engine.errors import ConfigurationError, ConflictError
from engine.memory.errors import MemoryPolicyError
from engine.memory.jobs import (
    LEASE_RENEW_FRACTION,
    JobPolicy,
    JobState,
    JobStatus,
    JobType,
    lease,
    recover,
)
from engine.memory.worker import JobOutcome, JobOutcomeKind, JobWork, ensure_job, run_job_once
from tests.test_memory.helpers import MAIN, REALM, SESSION
from tests.test_scheduler.conftest import World

KEY = f"{REALM}/{SESSION}/branch:{MAIN}"
POLICY = JobPolicy()  # the defaults: a 120 s lease, a 90 s timeout


class Beats:
    """The heartbeat's pause, ended by the test: one renewal each time the test says so."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.cancelled = 0
        self._gates: asyncio.Queue[asyncio.Future[None]] = asyncio.Queue()
        self._current: asyncio.Future[None] | None = None

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._gates.put_nowait(gate)
        try:
            await gate
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    async def paused(self) -> None:
        """Wait until the heartbeat pauses (before its next renewal)."""
        self._current = await self._gates.get()

    def release(self) -> None:
        """End the current pause: the heartbeat renews now."""
        assert self._current is not None
        self._current.set_result(None)
        self._current = None

    async def beat(self) -> None:
        """One renewal, stored by the time this returns (the heartbeat paused again)."""
        self.release()
        await self.paused()


def _run(
    world: World, work: JobWork, beats: Beats, owner: str = "worker-a"
) -> asyncio.Task[JobOutcome]:
    return asyncio.ensure_future(
        run_job_once(
            world.repo,
            job_type=JobType.COMPACT,
            scope_key=KEY,
            owner=owner,
            clock=world.clock,
            policy=POLICY,
            work=work,
            pause=beats,
        )
    )


async def _stored(world: World) -> JobState:
    state = await world.repo.load_job(JobType.COMPACT, KEY)
    assert state is not None
    return state


@pytest.mark.parametrize(("timeout_s", "lease_s"), [(120, 120), (150, 120)])
def test_a_timeout_not_shorter_than_the_lease_is_refused(timeout_s: int, lease_s: int) -> None:
    with pytest.raises(MemoryPolicyError) as refused:
        JobPolicy(timeout=timedelta(seconds=timeout_s), lease_ttl=timedelta(seconds=lease_s))
    assert isinstance(refused.value, ConfigurationError)
    message = str(refused.value)
    assert f"timeout {timeout_s} s" in message and f"lease {lease_s} s" in message
    assert "\n" not in message
    # Just shorter is fine, and the defaults are.
    JobPolicy(timeout=timedelta(seconds=lease_s - 1), lease_ttl=timedelta(seconds=lease_s))
    assert POLICY.timeout < POLICY.lease_ttl


async def test_a_job_running_past_its_lease_is_not_taken_over(world: World) -> None:
    await ensure_job(world.repo, JobType.COMPACT, KEY, due_at=world.clock.now())
    ran_by: list[str | None] = []
    started = asyncio.Event()

    async def long_job(state: JobState) -> None:
        ran_by.append(state.lease_owner)
        started.set()
        await asyncio.Event().wait()  # runs until it is cut

    beats = Beats()
    first = _run(world, long_job, beats)
    await started.wait()
    await beats.paused()
    leased_at = world.clock.now()
    interval = POLICY.lease_ttl.total_seconds() * LEASE_RENEW_FRACTION
    assert beats.asked == [interval]
    for _ in range(2):
        world.clock.advance(seconds=interval)
        await beats.beat()
        stored = await _stored(world)
        assert stored.lease_owner == "worker-a"
        assert stored.lease_expires_at == world.clock.now() + POLICY.lease_ttl
    world.clock.advance(seconds=50)  # 130 s since the lease was taken: past its first 120 s
    assert world.clock.now() > leased_at + POLICY.lease_ttl

    # A second worker (another process's scheduler) finds the job leased, not free to take.
    second = world.scheduler(instance="other")
    assert await second.tick() == []
    refused = await second.run(JobType.COMPACT, KEY)
    assert refused.kind is JobOutcomeKind.NOT_DUE and "leased by worker-a" in refused.reason
    assert ran_by == ["worker-a"]

    # Past its timeout by the same clock, the next heartbeat cuts the job: its own worker
    # records the timeout (a retry), nobody else ever ran it.
    beats.release()
    outcome = await first
    assert outcome.kind is JobOutcomeKind.FAILED and outcome.reason == "timeout"
    assert outcome.state is not None and outcome.state.status is JobStatus.RETRY_WAITING
    assert ran_by == ["worker-a"]
    assert (await _stored(world)).attempts == 1


@pytest.mark.parametrize("ending", ["returns", "raises"])
async def test_the_renewal_stops_when_the_job_ends(world: World, ending: str) -> None:
    await ensure_job(world.repo, JobType.COMPACT, KEY, due_at=world.clock.now())
    finish = asyncio.Event()

    async def job(_: JobState) -> None:
        await finish.wait()
        if ending == "raises":
            raise ConflictError("the plan raced another writer")

    beats = Beats()
    run = _run(world, job, beats)
    await beats.paused()
    world.clock.advance(seconds=40)
    await beats.beat()  # one renewal while it runs
    renewed = await _stored(world)
    finish.set()
    outcome = await run
    expected = JobOutcomeKind.RAN if ending == "returns" else JobOutcomeKind.FAILED
    assert outcome.kind is expected
    # The outcome was stored over the renewed lease, and the pause the heartbeat was in was
    # cancelled and awaited: no task is left running.
    assert outcome.state is not None and outcome.state.revision == renewed.revision + 1
    assert beats.cancelled == 1 and len(beats.asked) == 2
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
    assert await _stored(world) == outcome.state


async def test_a_lease_lost_to_another_worker_stops_the_job(world: World) -> None:
    await ensure_job(world.repo, JobType.COMPACT, KEY, due_at=world.clock.now())
    cancelled = asyncio.Event()

    async def job(_: JobState) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    beats = Beats()
    run = _run(world, job, beats)
    await beats.paused()
    # Another worker took the job over (say, recovery that took worker-a for dead).
    held = await _stored(world)
    freed = recover(held, now=world.clock.now(), policy=POLICY, dead_owner="worker-a")
    taken = lease(freed, owner="worker-b", now=world.clock.now(), policy=POLICY)
    assert await world.repo.save_job(taken, expected_revision=held.revision)
    beats.release()
    outcome = await run
    assert outcome.kind is JobOutcomeKind.LOST_RACE and cancelled.is_set()
    assert await _stored(world) == taken  # worker-a wrote nothing over worker-b's lease


async def test_a_renewal_the_database_fails_is_tried_again_at_the_next_beat(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    await ensure_job(world.repo, JobType.COMPACT, KEY, due_at=world.clock.now())
    finish = asyncio.Event()

    async def job(_: JobState) -> None:
        await finish.wait()

    beats = Beats()
    run = _run(world, job, beats)
    await beats.paused()
    save = world.repo.save_job
    failures = ["database is locked"]

    async def flaky_save(state: JobState, *, expected_revision: int | None) -> bool:
        if failures:
            raise ConflictError(failures.pop())
        return await save(state, expected_revision=expected_revision)

    monkeypatch.setattr(world.repo, "save_job", flaky_save)
    held = await _stored(world)
    world.clock.advance(seconds=40)
    await beats.beat()  # this renewal fails: the job keeps running on its lease
    assert failures == [] and await _stored(world) == held
    world.clock.advance(seconds=40)
    await beats.beat()  # the next one is stored
    assert (await _stored(world)).lease_expires_at == world.clock.now() + POLICY.lease_ttl
    finish.set()
    assert (await run).kind is JobOutcomeKind.RAN
