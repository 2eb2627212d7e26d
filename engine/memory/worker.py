"""Running one memory job through its state machine against a repository.

The glue a scheduler (APScheduler in ``bot``) calls on every tick: load the job, recover it if
its lease was lost, lease it with compare-and-set, run the work under the policy's timeout
while a heartbeat renews the lease (:mod:`engine.memory.heartbeat`), and store success or
failure with compare-and-set again. Time comes from the injected clock; among instances racing
for the same job exactly one wins the lease, and keeps it until the run ends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from engine.errors import ConflictError, EngineError, GenerationError
from engine.memory.heartbeat import JobHeartbeat, Pause
from engine.memory.jobs import (
    JobPolicy,
    JobState,
    JobType,
    fail,
    lease,
    new_job,
    recover,
    should_run,
    succeed,
)
from engine.memory.ports import MemoryRepository
from engine.ports import Clock

JobWork = Callable[[JobState], Awaitable[None]]
"""The job's body; receives the leased state (its key, attempts, owner)."""


class JobOutcomeKind(StrEnum):
    """What one call of :func:`run_job_once` did."""

    RAN = "ran"
    NOT_DUE = "not_due"
    LOST_RACE = "lost_race"
    FAILED = "failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class JobOutcome:
    """The result of one tick for one job, with the state as stored afterwards."""

    kind: JobOutcomeKind
    state: JobState | None
    reason: str = ""


async def ensure_job(
    repo: MemoryRepository, job_type: JobType, scope_key: str, *, due_at: datetime
) -> JobState:
    """The job's state, created (due at ``due_at``) if it never existed."""
    current = await repo.load_job(job_type, scope_key)
    if current is not None:
        return current
    fresh = new_job(job_type, scope_key, due_at=due_at)
    if await repo.save_job(fresh, expected_revision=None):
        return fresh
    stored = await repo.load_job(job_type, scope_key)
    if stored is None:  # pragma: no cover - a repository that loses writes
        raise ConflictError(f"job {job_type}:{scope_key} vanished while being created")
    return stored


async def recover_jobs(
    repo: MemoryRepository,
    *,
    clock: Clock,
    policy_for: Callable[[JobType], JobPolicy],
    dead_owner: str | None = None,
) -> int:
    """On start: repair every job (lost leases, missed runs); returns how many changed."""
    changed = 0
    for state in await repo.list_jobs():
        fixed = recover(
            state, now=clock.now(), policy=policy_for(state.job_type), dead_owner=dead_owner
        )
        if fixed is not state and await repo.save_job(fixed, expected_revision=state.revision):
            changed += 1
    return changed


async def run_job_once(
    repo: MemoryRepository,
    *,
    job_type: JobType,
    scope_key: str,
    owner: str,
    clock: Clock,
    policy: JobPolicy,
    work: JobWork,
    pause: Pause = asyncio.sleep,
) -> JobOutcome:
    """Lease the job if it is due, run ``work`` under the timeout, and record the result.

    While ``work`` runs its lease is renewed every ``policy.renew_interval`` (``pause`` waits
    between renewals); a run the heartbeat stops is a timeout (past it by the clock) or a lost
    race (another worker changed the job: nothing is stored over it).

    A :class:`GenerationError` is retried when it says so, a :class:`ConflictError` always,
    any other :class:`EngineError` goes to the dead letter. Anything else (a bug, or
    cancellation at shutdown) is recorded as a retryable failure and re-raised.
    """
    state = await repo.load_job(job_type, scope_key)
    if state is None:
        return JobOutcome(kind=JobOutcomeKind.NOT_DUE, state=None, reason="no such job")
    repaired = recover(state, now=clock.now(), policy=policy)
    if repaired is not state:
        if not await repo.save_job(repaired, expected_revision=state.revision):
            return JobOutcome(kind=JobOutcomeKind.LOST_RACE, state=None, reason="recovery")
        state = repaired
    decision = should_run(state, clock.now())
    if not decision.run:
        return JobOutcome(kind=JobOutcomeKind.NOT_DUE, state=state, reason=decision.reason)
    leased = lease(state, owner=owner, now=clock.now(), policy=policy)
    if not await repo.save_job(leased, expected_revision=state.revision):
        return JobOutcome(kind=JobOutcomeKind.LOST_RACE, state=None, reason="lease")
    heartbeat = JobHeartbeat(repo, leased, clock=clock, policy=policy, pause=pause)
    try:
        async with heartbeat:
            ended = await asyncio.wait_for(
                heartbeat.run(work), timeout=policy.timeout.total_seconds()
            )
    except TimeoutError:
        return await _store_failure(repo, heartbeat.state, clock, policy, "timeout", True)
    except GenerationError as exc:
        return await _store_failure(repo, heartbeat.state, clock, policy, str(exc), exc.retryable)
    except ConflictError as exc:
        return await _store_failure(repo, heartbeat.state, clock, policy, str(exc), True)
    except EngineError as exc:
        return await _store_failure(repo, heartbeat.state, clock, policy, str(exc), False)
    except BaseException as exc:
        await _store_failure(repo, heartbeat.state, clock, policy, repr(exc), retryable=True)
        raise
    if not ended:
        if heartbeat.timed_out:
            return await _store_failure(repo, heartbeat.state, clock, policy, "timeout", True)
        return JobOutcome(kind=JobOutcomeKind.LOST_RACE, state=None, reason=heartbeat.lost or "")
    current = heartbeat.state
    done = succeed(current, owner=owner, now=clock.now(), policy=policy)
    if not await repo.save_job(done, expected_revision=current.revision):
        return JobOutcome(kind=JobOutcomeKind.LOST_RACE, state=None, reason="lease lost")
    return JobOutcome(kind=JobOutcomeKind.RAN, state=done)


async def _store_failure(
    repo: MemoryRepository,
    leased: JobState,
    clock: Clock,
    policy: JobPolicy,
    error: str,
    retryable: bool,
) -> JobOutcome:
    assert leased.lease_owner is not None
    failed = fail(
        leased,
        owner=leased.lease_owner,
        now=clock.now(),
        error=error,
        policy=policy,
        retryable=retryable,
    )
    if not await repo.save_job(failed, expected_revision=leased.revision):
        return JobOutcome(kind=JobOutcomeKind.LOST_RACE, state=None, reason="lease lost")
    return JobOutcome(kind=JobOutcomeKind.FAILED, state=failed, reason=error)
