"""run_job_once against the in-memory repository, with a controllable clock."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from engine.errors import ConflictError, FormatError, GenerationError
from engine.memory.jobs import JobPolicy, JobState, JobStatus, JobType, lease
from engine.memory.worker import (
    JobOutcomeKind,
    ensure_job,
    recover_jobs,
    run_job_once,
)
from tests.fakes.memory_repo import InMemoryMemoryRepository
from tests.test_memory.helpers import T0


@dataclass
class FakeClock:
    """An :class:`engine.ports.Clock` the test moves by hand."""

    current: datetime = T0

    def now(self) -> datetime:
        return self.current

    def advance(self, **kw: float) -> None:
        self.current += timedelta(**kw)


POLICY = JobPolicy(interval=timedelta(minutes=60))
KEY = "branch:main"


async def _run(repo: InMemoryMemoryRepository, clock: FakeClock, work, owner: str = "w1"):
    return await run_job_once(
        repo,
        job_type=JobType.COMPACT,
        scope_key=KEY,
        owner=owner,
        clock=clock,
        policy=POLICY,
        work=work,
    )


async def test_due_job_runs_once_and_is_rescheduled() -> None:
    repo, clock, calls = InMemoryMemoryRepository(), FakeClock(), []

    async def work(state: JobState) -> None:
        calls.append(state.lease_owner)

    await ensure_job(repo, JobType.COMPACT, KEY, due_at=clock.now())
    assert (await ensure_job(repo, JobType.COMPACT, KEY, due_at=clock.now())).revision == 0
    first = await _run(repo, clock, work)
    again = await _run(repo, clock, work)
    assert first.kind is JobOutcomeKind.RAN and again.kind is JobOutcomeKind.NOT_DUE
    assert calls == ["w1"]
    clock.advance(minutes=60)
    assert (await _run(repo, clock, work)).kind is JobOutcomeKind.RAN and len(calls) == 2


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (GenerationError("model down", retryable=True), JobStatus.RETRY_WAITING),
        (GenerationError("bad key", retryable=False), JobStatus.DEAD_LETTER),
        (ConflictError("plan raced"), JobStatus.RETRY_WAITING),
        (FormatError("broken row"), JobStatus.DEAD_LETTER),
    ],
)
async def test_failures_are_recorded(error: Exception, status: JobStatus) -> None:
    repo, clock = InMemoryMemoryRepository(), FakeClock()

    async def work(_: JobState) -> None:
        raise error

    await ensure_job(repo, JobType.COMPACT, KEY, due_at=clock.now())
    outcome = await _run(repo, clock, work)
    assert outcome.kind is JobOutcomeKind.FAILED and outcome.state is not None
    assert outcome.state.status is status


async def test_timeout_and_bugs_are_recorded_and_bugs_reraised() -> None:
    repo, clock = InMemoryMemoryRepository(), FakeClock()
    policy = JobPolicy(timeout=timedelta(milliseconds=20))

    async def hang(_: JobState) -> None:
        await asyncio.Event().wait()

    async def bug(_: JobState) -> None:
        raise ZeroDivisionError

    await ensure_job(repo, JobType.DECAY, KEY, due_at=clock.now())
    outcome = await run_job_once(
        repo,
        job_type=JobType.DECAY,
        scope_key=KEY,
        owner="w",
        clock=clock,
        policy=policy,
        work=hang,
    )
    assert outcome.reason == "timeout" and outcome.state.status is JobStatus.RETRY_WAITING
    clock.advance(seconds=5)
    with pytest.raises(ZeroDivisionError):
        await run_job_once(
            repo,
            job_type=JobType.DECAY,
            scope_key=KEY,
            owner="w",
            clock=clock,
            policy=policy,
            work=bug,
        )
    stored = await repo.load_job(JobType.DECAY, KEY)
    assert stored is not None and stored.attempts == 2


async def test_restart_recovers_and_the_interrupted_run_resumes_once() -> None:
    repo, clock, calls = InMemoryMemoryRepository(), FakeClock(), []
    job = await ensure_job(repo, JobType.COMPACT, KEY, due_at=clock.now())
    crashed = lease(job, owner="old-proc", now=clock.now(), policy=POLICY)
    assert await repo.save_job(crashed, expected_revision=job.revision)
    clock.advance(seconds=3)

    async def work(state: JobState) -> None:
        calls.append(state.lease_owner)

    # Nothing runs while the dead process still holds the lease...
    assert (await _run(repo, clock, work, owner="new-a")).kind is JobOutcomeKind.NOT_DUE
    # ...until start-up recovery frees it; then exactly one of two racing workers runs it.
    assert (
        await recover_jobs(repo, clock=clock, policy_for=lambda _: POLICY, dead_owner="old-proc")
        == 1
    )
    assert (
        await recover_jobs(repo, clock=clock, policy_for=lambda _: POLICY, dead_owner="old-proc")
        == 0
    )
    outcomes = await asyncio.gather(
        _run(repo, clock, work, owner="new-a"), _run(repo, clock, work, owner="new-b")
    )
    assert sorted(o.kind.value for o in outcomes) == ["not_due", "ran"] or sorted(
        o.kind.value for o in outcomes
    ) == ["lost_race", "ran"]
    assert len(calls) == 1
    assert (await _run(repo, clock, work)).kind is JobOutcomeKind.NOT_DUE
