"""The per-scope background job state machine (pure: every function takes the time as input).

One :class:`JobState` exists per (job type, scope). Storage keeps it and swaps it with
compare-and-set on ``revision``, so among instances racing for a job exactly one wins a lease.

::

    pending --lease--> leased --succeed--> pending (periodic, next interval) | succeeded
       ^                  |--fail--> retry_waiting (backoff 1 s x 2^n, cap 30 s) --due--> lease
       |                  |--fail, attempts exhausted or fatal--> dead_letter
       +--recover---------+  lease expired: re-leasable once (a second expiry: dead_letter)
                          |--renew--> leased (a heartbeat, every LEASE_RENEW_FRACTION of it)

A running job renews its lease while it runs (:mod:`engine.memory.heartbeat`), so a long run
is never taken over; its timeout is shorter than the lease, so a run is cut by its own worker
before its lease could run out.

After a restart, :func:`recover` turns leases of the dead process (or expired ones) back into a
due run, and a periodic run missed while the bot was down becomes due exactly once, not once
per missed interval.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Final

from engine.memory.errors import JobTransitionError, MemoryPolicyError

MAX_JOB_ATTEMPTS = 5
BACKOFF_BASE = timedelta(seconds=1)
BACKOFF_CAP = timedelta(seconds=30)
LEASE_TTL = timedelta(seconds=120)
JOB_TIMEOUT = timedelta(seconds=90)
MAX_LEASE_TAKEOVERS = 1
LEASE_RENEW_FRACTION: Final = 1 / 3
"""A running job renews its lease after this fraction of ``lease_ttl``: two renewals in a row
may fail (a slow database) before the lease runs out."""
MAINTENANCE_INTERVAL = timedelta(minutes=60)
MAX_ERROR_CHARS = 500


class JobType(StrEnum):
    """The memory jobs."""

    INGEST_TURN = "ingest_turn"
    COMPACT = "compact"
    EXPIRY = "expiry"
    DECAY = "decay"
    EMBED = "embed"  # unit vectors, when an embeddings endpoint is configured


class JobStatus(StrEnum):
    """Where a job is in its life."""

    PENDING = "pending"
    LEASED = "leased"
    RETRY_WAITING = "retry_waiting"
    SUCCEEDED = "succeeded"
    DEAD_LETTER = "dead_letter"


@dataclass(frozen=True, slots=True, kw_only=True)
class JobPolicy:
    """Retry, lease and schedule settings for one job type; ``interval`` None: one-shot."""

    max_attempts: int = MAX_JOB_ATTEMPTS
    backoff_base: timedelta = BACKOFF_BASE
    backoff_cap: timedelta = BACKOFF_CAP
    lease_ttl: timedelta = LEASE_TTL
    timeout: timedelta = JOB_TIMEOUT
    max_lease_takeovers: int = MAX_LEASE_TAKEOVERS
    interval: timedelta | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise MemoryPolicyError(f"job max_attempts must be >= 1, got {self.max_attempts}")
        if self.backoff_base <= timedelta(0) or self.backoff_cap < self.backoff_base:
            raise MemoryPolicyError("job backoff needs 0 < base <= cap")
        if self.lease_ttl <= timedelta(0) or self.timeout <= timedelta(0):
            raise MemoryPolicyError("job lease_ttl and timeout must be positive")
        if self.timeout >= self.lease_ttl:
            # A run cut at its timeout must end while its lease still holds: otherwise another
            # worker could take the lease over and run the job beside it.
            raise MemoryPolicyError(
                f"job timeout {_seconds(self.timeout)} s must be shorter than its lease "
                f"{_seconds(self.lease_ttl)} s"
            )
        if self.max_lease_takeovers < 0:
            raise MemoryPolicyError("job max_lease_takeovers must be >= 0")
        if self.interval is not None and self.interval <= timedelta(0):
            raise MemoryPolicyError("job interval must be positive")

    @property
    def renew_interval(self) -> timedelta:
        """How often a running job renews its lease (:data:`LEASE_RENEW_FRACTION` of it)."""
        return self.lease_ttl * LEASE_RENEW_FRACTION


def _seconds(span: timedelta) -> str:
    """``span`` in seconds as users write it: ``90``, ``0.05``."""
    return f"{span.total_seconds():g}"


@dataclass(frozen=True, slots=True, kw_only=True)
class JobState:
    """The stored state of one job; ``revision`` grows by one on every transition."""

    job_type: JobType
    scope_key: str
    status: JobStatus = JobStatus.PENDING
    revision: int = 0
    attempts: int = 0
    next_run_at: datetime | None = None
    lease_owner: str | None = None
    leased_at: datetime | None = None
    lease_expires_at: datetime | None = None
    takeovers: int = 0
    last_error: str | None = None
    last_success_at: datetime | None = None

    @property
    def key(self) -> str:
        """``job_type:scope_key``, unique per job."""
        return f"{self.job_type}:{self.scope_key}"


@dataclass(frozen=True, slots=True, kw_only=True)
class RunDecision:
    """Whether a worker may lease the job now, and why (or why not)."""

    run: bool
    reason: str


def new_job(job_type: JobType, scope_key: str, *, due_at: datetime) -> JobState:
    """A job that becomes due at ``due_at``."""
    return JobState(job_type=job_type, scope_key=scope_key, next_run_at=due_at)


def backoff_delay(attempts: int, policy: JobPolicy) -> timedelta:
    """The wait after the ``attempts``-th failure: base x 2^(attempts - 1), capped."""
    if attempts <= 0:
        return timedelta(0)
    # Work in float seconds: a timedelta times a big power of two would overflow.
    seconds = policy.backoff_base.total_seconds() * 2.0 ** min(attempts - 1, 64)
    return min(policy.backoff_cap, timedelta(seconds=min(seconds, 1e9)))


def lease_expired(state: JobState, now: datetime) -> bool:
    """Whether a held lease has run out."""
    return (
        state.status is JobStatus.LEASED
        and state.lease_expires_at is not None
        and now >= state.lease_expires_at
    )


def should_run(state: JobState, now: datetime) -> RunDecision:
    """Whether the job may be leased at ``now``."""
    if state.status in (JobStatus.PENDING, JobStatus.RETRY_WAITING):
        if state.next_run_at is None or state.next_run_at <= now:
            return RunDecision(run=True, reason="due")
        return RunDecision(run=False, reason=f"not due before {state.next_run_at.isoformat()}")
    if state.status is JobStatus.LEASED:
        if lease_expired(state, now):
            return RunDecision(run=False, reason="lease expired; recover it first")
        return RunDecision(run=False, reason=f"leased by {state.lease_owner}")
    return RunDecision(run=False, reason=state.status.value)


def lease(state: JobState, *, owner: str, now: datetime, policy: JobPolicy) -> JobState:
    """Take the lease for a run; raises :class:`JobTransitionError` when not due."""
    decision = should_run(state, now)
    if not decision.run:
        raise JobTransitionError(f"job {state.key}: cannot lease ({decision.reason})")
    return replace(
        state,
        status=JobStatus.LEASED,
        revision=state.revision + 1,
        lease_owner=owner,
        leased_at=now,
        lease_expires_at=now + policy.lease_ttl,
    )


def _require_lease(state: JobState, owner: str, action: str) -> None:
    if state.status is not JobStatus.LEASED or state.lease_owner != owner:
        raise JobTransitionError(
            f"job {state.key}: {owner} cannot {action}; status {state.status.value}, "
            f"lease owner {state.lease_owner}"
        )


def renew(state: JobState, *, owner: str, now: datetime, policy: JobPolicy) -> JobState:
    """Extend the owner's lease (a heartbeat); refused once the lease expired or timed out."""
    _require_lease(state, owner, "renew")
    if lease_expired(state, now) or timed_out(state, now, policy):
        raise JobTransitionError(f"job {state.key}: lease of {owner} ran out; not renewed")
    return replace(state, revision=state.revision + 1, lease_expires_at=now + policy.lease_ttl)


def timed_out(state: JobState, now: datetime, policy: JobPolicy) -> bool:
    """Whether the current run has exceeded the policy's timeout (the caller cancels it)."""
    return (
        state.status is JobStatus.LEASED
        and state.leased_at is not None
        and now - state.leased_at >= policy.timeout
    )


def succeed(state: JobState, *, owner: str, now: datetime, policy: JobPolicy) -> JobState:
    """Record a finished run: periodic jobs become due again one interval later."""
    _require_lease(state, owner, "succeed")
    periodic = policy.interval is not None
    return replace(
        state,
        status=JobStatus.PENDING if periodic else JobStatus.SUCCEEDED,
        revision=state.revision + 1,
        attempts=0,
        takeovers=0,
        next_run_at=now + policy.interval if policy.interval is not None else None,
        lease_owner=None,
        leased_at=None,
        lease_expires_at=None,
        last_error=None,
        last_success_at=now,
    )


def fail(
    state: JobState,
    *,
    owner: str,
    now: datetime,
    error: str,
    policy: JobPolicy,
    retryable: bool = True,
) -> JobState:
    """Record a failed run: retry after the backoff, or dead-letter when out of attempts."""
    _require_lease(state, owner, "fail")
    return _failed(state, now=now, error=error, policy=policy, retryable=retryable)


def _failed(
    state: JobState, *, now: datetime, error: str, policy: JobPolicy, retryable: bool
) -> JobState:
    attempts = state.attempts + 1
    dead = not retryable or attempts >= policy.max_attempts
    return replace(
        state,
        status=JobStatus.DEAD_LETTER if dead else JobStatus.RETRY_WAITING,
        revision=state.revision + 1,
        attempts=attempts,
        next_run_at=None if dead else now + backoff_delay(attempts, policy),
        lease_owner=None,
        leased_at=None,
        lease_expires_at=None,
        last_error=error[:MAX_ERROR_CHARS],
    )


def recover(
    state: JobState, *, now: datetime, policy: JobPolicy, dead_owner: str | None = None
) -> JobState:
    """Repair a job after a restart or on a sweep; returns ``state`` itself when nothing to do.

    * A lease that expired, or that ``dead_owner`` (the previous process) held, counts as a
      failed attempt and becomes due now, once: when the run that took it over also loses its
      lease, the job goes to the dead letter instead of looping.
    * A due time in the past (runs missed while down) collapses to one run due now.
    """
    if state.status is JobStatus.LEASED:
        orphaned = dead_owner is not None and state.lease_owner == dead_owner
        if not (orphaned or lease_expired(state, now)):
            return state
        if state.takeovers >= policy.max_lease_takeovers:
            return _failed(
                state,
                now=now,
                error="lease lost again after a takeover",
                policy=policy,
                retryable=False,
            )
        failed = _failed(state, now=now, error="lease lost", policy=policy, retryable=True)
        if failed.status is JobStatus.DEAD_LETTER:
            return failed
        return replace(
            failed, status=JobStatus.PENDING, next_run_at=now, takeovers=state.takeovers + 1
        )
    missed = state.next_run_at is not None and state.next_run_at < now
    if state.status in (JobStatus.PENDING, JobStatus.RETRY_WAITING) and missed:
        return replace(state, revision=state.revision + 1, next_run_at=now)
    return state


def request_run(state: JobState, *, now: datetime) -> JobState:
    """Ask for a run (e.g. new micros arrived): a finished one-shot job becomes due now.

    A job already due, running or waiting keeps its state; a dead letter stays one until
    :func:`revive` is called.
    """
    if state.status is JobStatus.SUCCEEDED:
        return replace(
            state, status=JobStatus.PENDING, revision=state.revision + 1, next_run_at=now
        )
    return state


def revive(state: JobState, *, now: datetime) -> JobState:
    """Take a job out of the dead letter by hand, with its attempts reset."""
    if state.status is not JobStatus.DEAD_LETTER:
        raise JobTransitionError(f"job {state.key} is {state.status.value}, not dead_letter")
    return replace(
        state,
        status=JobStatus.PENDING,
        revision=state.revision + 1,
        attempts=0,
        takeovers=0,
        next_run_at=now,
        last_error=None,
    )
