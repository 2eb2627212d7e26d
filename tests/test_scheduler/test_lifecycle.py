"""Retries with backoff, the dead letter, timeouts, restarts, and a clean start and shutdown."""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from bot.scheduler import (
    MemoryScheduler,
    build_memory_service,
    start_memory_jobs,
    timeline_floors,
)
from engine.errors import GenerationError
from engine.memory.compaction import CompactionRequest
from engine.memory.jobs import JobPolicy, JobStatus, JobType, lease
from engine.memory.records import MemoryScope
from engine.memory.scoping import JobScope
from engine.memory.worker import JobOutcomeKind, ensure_job
from engine.timeline.service import TimelineService
from tests.test_memory.helpers import MAIN, REALM, SESSION, view
from tests.test_scheduler.conftest import World
from tests.test_storage.support import World as TimelineWorld
from tests.test_storage.support import open_test_storage

KEY = f"{REALM}/{SESSION}/branch:{MAIN}"


async def _twelve_micros(world: World, scheduler: MemoryScheduler) -> None:
    for floor in range(1, 13):
        await scheduler.service.after_commit(
            view(floor),
            user_text="u",
            reply_text="r",
            tag_summaries=[f"Floor {floor} happened."],
            run_agent=False,
        )


async def _compact(scheduler: MemoryScheduler):
    return await scheduler.run(JobType.COMPACT, KEY)


async def _macros(world: World) -> int:
    return len(world.events.named("memory.compacted"))


async def test_retries_back_off_doubling_then_dead_letter(world: World) -> None:
    calls = 0

    async def down(_: CompactionRequest) -> str:
        nonlocal calls
        calls += 1
        raise GenerationError("memory model unreachable", retryable=True)

    world.summarise = down
    scheduler = world.scheduler()
    await _twelve_micros(world, scheduler)
    waits = []
    for attempt in range(1, 6):
        outcome = await _compact(scheduler)
        assert outcome.kind is JobOutcomeKind.FAILED and outcome.state is not None
        assert outcome.state.attempts == attempt and calls == attempt
        if attempt == 5:
            assert outcome.state.status is JobStatus.DEAD_LETTER
            assert outcome.state.next_run_at is None
            break
        assert outcome.state.status is JobStatus.RETRY_WAITING
        assert outcome.state.last_error == "memory model unreachable"
        wait = outcome.state.next_run_at - world.clock.now()
        waits.append(wait.total_seconds())
        world.clock.advance(seconds=wait.total_seconds() - 0.5)
        assert (await _compact(scheduler)).kind is JobOutcomeKind.NOT_DUE  # still backing off
        world.clock.advance(seconds=0.5)
    assert waits == [1, 2, 4, 8]
    world.clock.advance(days=1)
    assert (await _compact(scheduler)).kind is JobOutcomeKind.NOT_DUE  # dead stays dead
    assert calls == 5 and await _macros(world) == 0


async def test_backoff_is_capped_at_thirty_seconds(world: World) -> None:
    async def down(_: CompactionRequest) -> str:
        raise GenerationError("still down", retryable=True)

    world.summarise = down
    scheduler = world.scheduler(policies={JobType.COMPACT: JobPolicy(max_attempts=9)})
    await _twelve_micros(world, scheduler)
    waits = []
    for _ in range(8):
        state = (await _compact(scheduler)).state
        assert state is not None
        waits.append((state.next_run_at - world.clock.now()).total_seconds())
        world.clock.advance(seconds=60)
    assert waits == [1, 2, 4, 8, 16, 30, 30, 30]


async def test_a_fatal_error_goes_straight_to_the_dead_letter(world: World) -> None:
    async def refused(_: CompactionRequest) -> str:
        raise GenerationError("invalid API key", retryable=False)

    world.summarise = refused
    scheduler = world.scheduler()
    await _twelve_micros(world, scheduler)
    state = (await _compact(scheduler)).state
    assert state is not None and state.status is JobStatus.DEAD_LETTER and state.attempts == 1


async def test_a_run_past_the_timeout_is_cut_and_retried(world: World) -> None:
    hang = asyncio.Event()

    async def slow(_: CompactionRequest) -> str:
        await hang.wait()
        return "never"

    world.summarise = slow
    policy = JobPolicy(timeout=timedelta(milliseconds=50))
    scheduler = world.scheduler(policies={JobType.COMPACT: policy})
    await _twelve_micros(world, scheduler)
    outcome = await _compact(scheduler)
    assert outcome.reason == "timeout" and outcome.state is not None
    assert outcome.state.status is JobStatus.RETRY_WAITING and await _macros(world) == 0
    world.summarise = World.summarise  # the model answers again
    world.clock.advance(seconds=1)
    assert (await _compact(scheduler)).kind is JobOutcomeKind.RAN and await _macros(world) == 1


async def test_an_interrupted_job_resumes_once_and_only_once_after_a_restart(
    world: World,
) -> None:
    first = world.scheduler()
    await _twelve_micros(world, first)
    # The first process leases the compaction job, then dies before finishing it.
    state = await world.repo.load_job(JobType.COMPACT, KEY)
    assert state is not None
    taken = lease(state, owner=first.owner, now=world.clock.now(), policy=JobPolicy())
    assert await world.repo.save_job(taken, expected_revision=state.revision)
    world.clock.advance(seconds=5)  # well inside the lease: only a restart can free it
    assert (await _compact(world.scheduler())).kind is JobOutcomeKind.NOT_DUE

    second = world.scheduler()
    assert await second.recover() == 3  # the lost lease, plus decay and expiry due 5 s ago
    resumed = await world.repo.load_job(JobType.COMPACT, KEY)
    assert resumed is not None
    assert (resumed.status, resumed.takeovers, resumed.attempts) == (JobStatus.PENDING, 1, 1)
    outcomes = await asyncio.gather(second.tick(), second.tick())
    ran = [o for batch in outcomes for o in batch if o.kind is JobOutcomeKind.RAN]
    assert [o.state.job_type for o in ran if o.state].count(JobType.COMPACT) == 1
    assert await _macros(world) == 1

    third = world.scheduler()  # another restart: nothing left to resume
    await third.recover()
    assert (await _compact(third)).kind is JobOutcomeKind.NOT_DUE
    assert await _macros(world) == 1 and len(world.summaries) == 1


async def test_a_job_lost_twice_goes_to_the_dead_letter(world: World) -> None:
    first = world.scheduler()
    await _twelve_micros(world, first)
    for _ in range(2):  # each process takes the lease and dies
        state = await world.repo.load_job(JobType.COMPACT, KEY)
        assert state is not None
        dying = world.scheduler()
        await dying.recover()
        state = await world.repo.load_job(JobType.COMPACT, KEY)
        assert state is not None and state.status is JobStatus.PENDING
        taken = lease(state, owner=dying.owner, now=world.clock.now(), policy=JobPolicy())
        assert await world.repo.save_job(taken, expected_revision=state.revision)
    last = world.scheduler()
    await last.recover()
    dead = await world.repo.load_job(JobType.COMPACT, KEY)
    assert dead is not None and dead.status is JobStatus.DEAD_LETTER
    assert dead.last_error == "lease lost again after a takeover" and await _macros(world) == 0


async def test_another_instance_keeps_its_lease_until_it_expires(world: World) -> None:
    scheduler = world.scheduler()
    await _twelve_micros(world, scheduler)
    state = await world.repo.load_job(JobType.COMPACT, KEY)
    assert state is not None
    taken = lease(state, owner="other-bot:1", now=world.clock.now(), policy=JobPolicy())
    assert await world.repo.save_job(taken, expected_revision=state.revision)
    assert await scheduler.recover() == 0  # not ours to take over
    assert (await _compact(scheduler)).kind is JobOutcomeKind.NOT_DUE
    world.clock.advance(seconds=120)  # the lease TTL ran out: now it is taken over, once
    outcome = await _compact(scheduler)
    assert outcome.kind is JobOutcomeKind.RAN and outcome.state is not None
    assert outcome.state.lease_owner is None and outcome.state.status is JobStatus.SUCCEEDED
    assert await _macros(world) == 1


async def test_runs_missed_while_down_run_once_on_start(world: World) -> None:
    scheduler = world.scheduler()
    await _twelve_micros(world, scheduler)
    await scheduler.tick()  # decay and expiry ran; next due in an hour
    before = {s.key: s for s in await world.repo.list_jobs()}
    world.clock.advance(hours=5)  # the bot was down for five intervals
    restarted = world.scheduler()
    assert await restarted.recover() == 2  # decay and expiry, each collapsed to one run
    first = await restarted.tick()
    ran = sorted(o.state.job_type for o in first if o.kind is JobOutcomeKind.RAN and o.state)
    assert ran == [JobType.DECAY, JobType.EXPIRY]
    assert not [o for o in await restarted.tick() if o.kind is JobOutcomeKind.RAN]
    after = {s.key: s for s in await world.repo.list_jobs()}
    decay = f"decay:{KEY}"
    assert after[decay].next_run_at == world.clock.now() + timedelta(hours=1)
    assert after[decay].last_success_at != before[decay].last_success_at


async def test_start_ensures_the_expiry_job_of_every_realm(world: World) -> None:
    await ensure_job(world.repo, JobType.DECAY, KEY, due_at=world.clock.now())
    await world.scheduler().recover()
    assert await world.repo.load_job(JobType.EXPIRY, REALM) is not None


async def test_start_ticks_and_shuts_down_cleanly(world: World) -> None:
    scheduler = world.scheduler()
    await _twelve_micros(world, scheduler)
    compacted = asyncio.Event()
    world.events.emit = lambda event: (  # type: ignore[method-assign]
        world.events.events.append(event),
        compacted.set() if event.name == "memory.compacted" else None,
    )
    await scheduler.start()
    assert scheduler.running
    with pytest.raises(RuntimeError):
        await scheduler.start()
    await asyncio.wait_for(compacted.wait(), timeout=30)
    await scheduler.shutdown()
    await scheduler.shutdown()  # a second call is harmless
    assert not scheduler.running and not scheduler._ticks
    done = await world.repo.load_job(JobType.COMPACT, KEY)
    assert done is not None and done.status is JobStatus.SUCCEEDED


async def test_shutdown_cancels_a_hanging_run_and_records_it(world: World) -> None:
    started = asyncio.Event()

    async def hang(_: CompactionRequest) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    world.summarise = hang
    scheduler = world.scheduler()
    await _twelve_micros(world, scheduler)
    await scheduler.start()
    await asyncio.wait_for(started.wait(), timeout=30)
    await scheduler.shutdown(grace_s=0.05)
    assert not scheduler._ticks
    state = await world.repo.load_job(JobType.COMPACT, KEY)
    assert state is not None and state.status is JobStatus.RETRY_WAITING
    assert state.attempts == 1 and "CancelledError" in (state.last_error or "")


async def test_the_app_helpers_build_and_start_on_real_storage(world: World) -> None:
    class Storage:
        engine = world.repo._engine

    service = build_memory_service(Storage(), model=None, model_name="gpt-4o-mini")  # type: ignore[arg-type]
    assert service.count("hello world") == 2
    timeline = TimelineService(Storage())  # type: ignore[arg-type]
    scheduler = await start_memory_jobs(service, timeline=timeline, instance="app")
    try:
        assert scheduler.running and scheduler.owner.startswith("app:")
    finally:
        await scheduler.shutdown()
    with pytest.raises(ValueError):
        MemoryScheduler(world.repo, service, instance="a:b")


async def test_timeline_floors_give_the_head_and_the_fork_floors(tmp_path: Path) -> None:
    async with open_test_storage("sqlite", tmp_path=tmp_path) as storage:
        timeline = TimelineWorld(storage)
        opened = await timeline.session()
        for text in ("one", "two", "three"):
            await timeline.turn(opened.main.id, text=text)
        fork = await timeline.timeline.fork(opened.main.id, name="alt", after_floor=2)
        floors = timeline_floors(timeline.timeline)

        def scope(branch_id: object, kind: MemoryScope = MemoryScope.BRANCH) -> JobScope:
            return JobScope(
                realm_id=str(opened.realm.id),
                session_id=str(opened.session.id),
                scope=kind,
                scope_id=str(branch_id),
            )

        assert await floors(scope(opened.main.id)) == (3, (2,))
        assert await floors(scope(fork.id)) == (2, ())
        assert await floors(scope(opened.session.id, MemoryScope.CHAT)) == (None, ())
        assert await floors(scope(9999)) == (None, ())
        assert await floors(scope("not-a-number")) == (None, ())


async def test_a_tick_starts_at_most_max_jobs_and_runs_max_concurrent_at_once(
    world: World,
) -> None:
    for i in range(5):
        await ensure_job(
            world.repo, JobType.DECAY, f"{REALM}/s{i}/branch:b{i}", due_at=world.clock.now()
        )
    running = peak = 0
    gate, two_running = asyncio.Event(), asyncio.Event()

    async def slow_decay(scope: JobScope, *, head_floor: int | None = None):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == 2:
            two_running.set()
        await gate.wait()
        running -= 1

    scheduler = world.scheduler(max_concurrent=2, max_jobs_per_tick=3)
    scheduler.service.decay = slow_decay  # type: ignore[method-assign]
    tick = asyncio.ensure_future(scheduler.tick())
    await asyncio.wait_for(two_running.wait(), timeout=30)
    await asyncio.sleep(0)  # a third job would start now if the limit let it
    gate.set()
    outcomes = await tick
    assert len(outcomes) == 3 and peak == 2
    assert all(o.kind is JobOutcomeKind.RAN for o in outcomes)
    assert len(await scheduler.tick()) == 2  # the rest, on the next tick


def test_scheduler_limits_are_checked(world: World) -> None:
    service = world.service()
    for bad in (
        {"tick_interval": timedelta(0)},
        {"max_concurrent": 0},
        {"max_jobs_per_tick": 0},
        {"instance": ""},
    ):
        with pytest.raises(ValueError):
            MemoryScheduler(world.repo, service, **bad)


async def test_only_leases_of_processes_that_are_gone_are_taken_over_on_start(
    world: World,
) -> None:
    finished = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await finished.wait()  # its pid now names no running process
    scheduler = world.scheduler()
    await _twelve_micros(world, scheduler)
    await scheduler.tick()  # decay and expiry are done; only compaction is left to lease
    for owner, recovered in (
        (f"bot:{os.getppid()}:t", False),  # a live process on this host keeps its lease
        (f"elsewhere:{finished.pid}:t", False),  # another host: wait for the lease to expire
        (f"bot:{finished.pid}:t", True),  # this host, process gone: resume now
    ):
        state = await world.repo.load_job(JobType.COMPACT, KEY)
        assert state is not None
        if state.status is not JobStatus.LEASED:
            state = replace(state, status=JobStatus.PENDING, next_run_at=world.clock.now())
            taken = lease(state, owner=owner, now=world.clock.now(), policy=JobPolicy())
        else:
            taken = replace(state, lease_owner=owner, revision=state.revision + 1)
        assert await world.repo.save_job(taken, expected_revision=state.revision)
        assert (await world.scheduler().recover() == 1) is recovered, owner
