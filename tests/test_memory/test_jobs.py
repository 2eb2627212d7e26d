"""The job state machine with a controllable clock: lease, backoff, dead letter, restart."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import pytest

from engine.memory.errors import JobTransitionError, MemoryPolicyError
from engine.memory.jobs import (
    BACKOFF_CAP,
    LEASE_TTL,
    MAINTENANCE_INTERVAL,
    MAX_JOB_ATTEMPTS,
    JobPolicy,
    JobState,
    JobStatus,
    JobType,
    backoff_delay,
    fail,
    lease,
    new_job,
    recover,
    renew,
    request_run,
    revive,
    should_run,
    succeed,
    timed_out,
)
from tests.fakes.memory_repo import InMemoryMemoryRepository
from tests.test_memory.helpers import T0

ONE_SHOT = JobPolicy()
PERIODIC = JobPolicy(interval=MAINTENANCE_INTERVAL)


@dataclass
class FakeClock:
    """A clock the test moves by hand."""

    now: datetime = T0

    def advance(self, **kw: float) -> datetime:
        self.now += timedelta(**kw)
        return self.now


def test_backoff_is_one_second_doubling_capped_at_thirty() -> None:
    assert [backoff_delay(n, ONE_SHOT).total_seconds() for n in range(0, 8)] == [
        0,
        1,
        2,
        4,
        8,
        16,
        30,
        30,
    ]
    assert backoff_delay(10_000, ONE_SHOT) == BACKOFF_CAP


def test_lease_succeed_and_periodic_reschedule() -> None:
    clock = FakeClock()
    job = new_job(JobType.EXPIRY, "chat:s1", due_at=clock.now)
    assert should_run(job, clock.now).run
    leased = lease(job, owner="w1", now=clock.now, policy=PERIODIC)
    assert leased.status is JobStatus.LEASED and leased.revision == 1
    assert leased.lease_expires_at == clock.now + LEASE_TTL
    with pytest.raises(JobTransitionError, match="cannot lease"):
        lease(leased, owner="w2", now=clock.now, policy=PERIODIC)
    with pytest.raises(JobTransitionError, match="w2 cannot succeed"):
        succeed(leased, owner="w2", now=clock.now, policy=PERIODIC)
    done = succeed(leased, owner="w1", now=clock.advance(seconds=5), policy=PERIODIC)
    assert (
        done.status is JobStatus.PENDING and done.next_run_at == clock.now + MAINTENANCE_INTERVAL
    )
    assert not should_run(done, clock.advance(minutes=59)).run
    assert should_run(done, clock.advance(minutes=1)).run
    one_shot = succeed(
        lease(job, owner="w1", now=T0, policy=ONE_SHOT), owner="w1", now=T0, policy=ONE_SHOT
    )
    assert one_shot.status is JobStatus.SUCCEEDED and not should_run(one_shot, clock.now).run
    assert request_run(one_shot, now=clock.now).status is JobStatus.PENDING


def test_retries_with_backoff_then_dead_letter() -> None:
    clock = FakeClock()
    job = new_job(JobType.COMPACT, "branch:b1", due_at=clock.now)
    waits = []
    for attempt in range(1, MAX_JOB_ATTEMPTS + 1):
        job = lease(job, owner="w", now=clock.now, policy=ONE_SHOT)
        job = fail(job, owner="w", now=clock.now, error=f"boom {attempt}", policy=ONE_SHOT)
        assert job.attempts == attempt
        if job.status is JobStatus.DEAD_LETTER:
            break
        assert job.status is JobStatus.RETRY_WAITING
        wait = job.next_run_at - clock.now
        waits.append(wait.total_seconds())
        assert not should_run(job, clock.now + wait - timedelta(milliseconds=1)).run
        clock.advance(seconds=wait.total_seconds())
    assert waits == [1, 2, 4, 8]
    assert job.status is JobStatus.DEAD_LETTER and job.last_error == "boom 5"
    assert not should_run(job, clock.advance(days=1)).run
    revived = revive(job, now=clock.now)
    assert revived.attempts == 0 and should_run(revived, clock.now).run
    with pytest.raises(JobTransitionError):
        revive(revived, now=clock.now)


def test_fatal_failure_goes_straight_to_dead_letter() -> None:
    job = lease(new_job(JobType.COMPACT, "x", due_at=T0), owner="w", now=T0, policy=ONE_SHOT)
    dead = fail(job, owner="w", now=T0, error="bad data", policy=ONE_SHOT, retryable=False)
    assert dead.status is JobStatus.DEAD_LETTER and dead.attempts == 1


def test_timeout_and_heartbeat() -> None:
    policy = JobPolicy(timeout=timedelta(seconds=60), lease_ttl=timedelta(seconds=90))
    clock = FakeClock()
    job = lease(new_job(JobType.COMPACT, "x", due_at=T0), owner="w", now=T0, policy=policy)
    job = renew(job, owner="w", now=clock.advance(seconds=20), policy=policy)
    assert job.lease_expires_at == clock.now + timedelta(seconds=90)
    assert not timed_out(job, clock.advance(seconds=39), policy)
    assert timed_out(job, clock.advance(seconds=1), policy)
    with pytest.raises(JobTransitionError, match="ran out"):
        renew(job, owner="w", now=clock.now, policy=policy)
    failed = fail(job, owner="w", now=clock.now, error="timeout", policy=policy)
    assert failed.status is JobStatus.RETRY_WAITING


def test_expired_lease_is_releasable_exactly_once() -> None:
    clock = FakeClock()
    job = lease(new_job(JobType.COMPACT, "x", due_at=T0), owner="w1", now=T0, policy=ONE_SHOT)
    assert recover(job, now=clock.advance(seconds=60), policy=ONE_SHOT) is job  # still valid
    stale = clock.advance(seconds=LEASE_TTL.total_seconds())
    assert not should_run(job, stale).run
    again = recover(job, now=stale, policy=ONE_SHOT)
    assert again.status is JobStatus.PENDING and again.takeovers == 1 and again.attempts == 1
    taken = lease(again, owner="w2", now=stale, policy=ONE_SHOT)
    lost_again = recover(
        taken, now=clock.advance(seconds=LEASE_TTL.total_seconds()), policy=ONE_SHOT
    )
    assert lost_again.status is JobStatus.DEAD_LETTER
    assert "again" in (lost_again.last_error or "")


async def test_restart_resumes_an_interrupted_job_once_and_only_once() -> None:
    repo = InMemoryMemoryRepository()
    clock = FakeClock()
    job = new_job(JobType.COMPACT, "branch:b1", due_at=clock.now)
    assert await repo.save_job(job, expected_revision=None)
    assert not await repo.save_job(job, expected_revision=None)  # already exists
    leased = lease(job, owner="proc-1", now=clock.now, policy=ONE_SHOT)
    assert await repo.save_job(leased, expected_revision=job.revision)
    # proc-1 dies mid-run. On start, proc-2 recovers the job it left behind.
    clock.advance(seconds=5)
    runs = 0
    for stored in await repo.list_jobs(JobType.COMPACT):
        fixed = recover(stored, now=clock.now, policy=ONE_SHOT, dead_owner="proc-1")
        assert fixed.status is JobStatus.PENDING
        assert await repo.save_job(fixed, expected_revision=stored.revision)
    # Two workers race for it; compare-and-set lets exactly one win.
    current = await repo.load_job(JobType.COMPACT, "branch:b1")
    assert current is not None
    winners = []
    for owner in ("proc-2a", "proc-2b"):
        attempt = lease(current, owner=owner, now=clock.now, policy=ONE_SHOT)
        if await repo.save_job(attempt, expected_revision=current.revision):
            winners.append(attempt)
    assert [w.lease_owner for w in winners] == ["proc-2a"]
    runs += 1
    done = succeed(winners[0], owner="proc-2a", now=clock.advance(seconds=1), policy=ONE_SHOT)
    assert await repo.save_job(done, expected_revision=winners[0].revision)
    # The late original run cannot commit; nothing is due any more.
    with pytest.raises(JobTransitionError):
        succeed(done, owner="proc-1", now=clock.now, policy=ONE_SHOT)
    final = await repo.load_job(JobType.COMPACT, "branch:b1")
    assert final is not None and not should_run(final, clock.advance(hours=1)).run
    assert recover(final, now=clock.now, policy=ONE_SHOT, dead_owner="proc-1") is final
    assert runs == 1


def test_runs_missed_while_down_collapse_to_one() -> None:
    clock = FakeClock()
    job = succeed(
        lease(new_job(JobType.DECAY, "realm", due_at=T0), owner="w", now=T0, policy=PERIODIC),
        owner="w",
        now=T0,
        policy=PERIODIC,
    )
    clock.advance(days=2)  # 48 intervals missed
    resumed = recover(job, now=clock.now, policy=PERIODIC)
    assert resumed.next_run_at == clock.now and should_run(resumed, clock.now).run
    ran = succeed(
        lease(resumed, owner="w", now=clock.now, policy=PERIODIC),
        owner="w",
        now=clock.now,
        policy=PERIODIC,
    )
    assert not should_run(ran, clock.now).run
    assert ran.next_run_at == clock.now + MAINTENANCE_INTERVAL


def test_policy_limits_are_checked() -> None:
    with pytest.raises(MemoryPolicyError):
        JobPolicy(max_attempts=0)
    with pytest.raises(MemoryPolicyError):
        JobPolicy(backoff_base=timedelta(seconds=60))
    with pytest.raises(MemoryPolicyError):
        JobPolicy(interval=timedelta(0))
    assert JobState(job_type=JobType.EXPIRY, scope_key="s").key == "expiry:s"
