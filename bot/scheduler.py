"""Background memory jobs: decay, expiry and compaction on APScheduler's ``AsyncIOScheduler``.

:class:`MemoryScheduler` owns one ``AsyncIOScheduler`` whose only APScheduler job is a tick
every :data:`TICK_INTERVAL`. A tick reads the memory job states from the database and runs the
due ones through :func:`engine.memory.worker.run_job_once`: each (job type, scope) has one
state row with a lease, attempts, backoff (1 s x 2^n, capped at 30 s), a dead letter and a
timeout shorter than the lease. The lease is taken by compare-and-set and renewed while the job
runs (:mod:`engine.memory.heartbeat`), so however many processes tick, one runs a scope's job
at a time, until the run ends or its timeout cuts it. The bodies are
:meth:`engine.memory.service.MemoryService.run_job`.

On :meth:`MemoryScheduler.start`, leases left by a process of the same ``instance`` (by
default this host) that no longer runs are released: the interrupted run becomes due once, and
if the run that takes it over is lost too, the job goes to the dead letter instead of looping.
Leases of live processes, or of other hosts, are left until they expire. Runs missed while the
bot was down collapse to one due run, and every realm that has memory gets its expiry job.
Time comes from an injected clock, so tests drive everything by hand with
:meth:`MemoryScheduler.tick`.

The application starts it with :func:`start_memory_jobs` and stops it with
``await scheduler.shutdown()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from adapters.storage import SqlStorage
from adapters.storage.memory_repo import SqlMemoryRepository
from adapters.storage.vector_repo import SqlVectorStore
from engine.clock import SystemClock
from engine.errors import EngineError, NotFoundError
from engine.memory.embedding import SemanticMemory
from engine.memory.jobs import (
    MAINTENANCE_INTERVAL,
    JobPolicy,
    JobState,
    JobStatus,
    JobType,
    lease_expired,
    should_run,
)
from engine.memory.ports import Embedder, MemoryRepository
from engine.memory.records import MemoryScope
from engine.memory.scoping import JobScope
from engine.memory.service import MemoryService, MemorySettings
from engine.memory.worker import JobOutcome, ensure_job, recover_jobs, run_job_once
from engine.ports import ChatModel, Clock, EventSink
from engine.prompt.tokens import counter_for_model
from engine.timeline.service import TimelineService
from engine.turns.options import memory_enabled

log = logging.getLogger(__name__)

TICK_INTERVAL: Final = timedelta(seconds=2)
"""How often the scheduler looks for due memory jobs (the reference worker polls every 2 s)."""
MAX_CONCURRENT_JOBS: Final = 4
"""Memory jobs one process runs at the same time."""
MAX_JOBS_PER_TICK: Final = 32
"""Due jobs started by one tick; the rest wait for the next tick."""
SHUTDOWN_GRACE_S: Final = 10.0
"""How long a running tick may finish on shutdown before it is cancelled."""
DEFAULT_INSTANCE: Final = socket.gethostname().replace(":", "-") or "tavernbot"
"""Processes on one host share an instance name, so a restart finds its predecessor's leases."""

ScopeFloors = Callable[[JobScope], Awaitable[tuple[int | None, tuple[int, ...]]]]
"""The head floor of a job's scope and the floors forks branch off after (None: unknown)."""
SessionMemoryOn = Callable[[str], Awaitable[bool]]
"""Whether the session with this id (as memory keeps it, text) has its memory on; the jobs
of a session whose memory is off wait (they run again once it is switched back on)."""


def default_policies() -> dict[JobType, JobPolicy]:
    """Compaction runs when a commit asks for it; decay and expiry every hour."""
    periodic = JobPolicy(interval=MAINTENANCE_INTERVAL)
    return {
        JobType.COMPACT: JobPolicy(),
        JobType.INGEST_TURN: JobPolicy(),
        JobType.DECAY: periodic,
        JobType.EXPIRY: periodic,
        JobType.EMBED: JobPolicy(),
    }


async def _unknown_floors(_: JobScope) -> tuple[int | None, tuple[int, ...]]:
    return None, ()


async def _memory_always_on(_: str) -> bool:
    return True


class MemoryScheduler:
    """Runs the memory jobs of one process; see the module docstring."""

    def __init__(
        self,
        repo: MemoryRepository,
        service: MemoryService,
        *,
        clock: Clock | None = None,
        instance: str = DEFAULT_INSTANCE,
        policies: Mapping[JobType, JobPolicy] | None = None,
        floors: ScopeFloors | None = None,
        memory_on: SessionMemoryOn | None = None,
        tick_interval: timedelta = TICK_INTERVAL,
        max_concurrent: int = MAX_CONCURRENT_JOBS,
        max_jobs_per_tick: int = MAX_JOBS_PER_TICK,
    ) -> None:
        if ":" in instance or not instance:
            raise ValueError(f"scheduler instance name {instance!r} must be non-empty, no ':'")
        if tick_interval <= timedelta(0) or max_concurrent < 1 or max_jobs_per_tick < 1:
            raise ValueError("tick_interval, max_concurrent and max_jobs_per_tick must be > 0")
        self.repo = repo
        self.service = service
        self.clock: Clock = clock or SystemClock()
        self.instance = instance
        # ``instance:pid:token``: the next process on this host recognises the leases this one
        # leaves behind when it dies (its pid is gone), and never takes a live process's.
        self.owner = f"{instance}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.policies = {**default_policies(), **(policies or {})}
        self.floors = floors or _unknown_floors
        self.memory_on = memory_on or _memory_always_on
        self.tick_interval = tick_interval
        self.max_jobs_per_tick = max_jobs_per_tick
        self._limit = asyncio.Semaphore(max_concurrent)
        self._scheduler: AsyncIOScheduler | None = None
        self._ticks: set[asyncio.Task[Any]] = set()

    def policy_for(self, job_type: JobType) -> JobPolicy:
        """The policy of one job type."""
        return self.policies[job_type]

    @property
    def running(self) -> bool:
        """Whether the APScheduler loop is started."""
        return self._scheduler is not None

    async def start(self) -> int:
        """Recover what an earlier process left, then tick every ``tick_interval`` (the first
        tick right away). Returns how many job states recovery repaired."""
        if self._scheduler is not None:
            raise RuntimeError("the memory scheduler is already running")
        repaired = await self.recover()
        scheduler = AsyncIOScheduler(timezone=UTC)
        scheduler.add_job(
            self._tick_job,
            "interval",
            seconds=self.tick_interval.total_seconds(),
            id="memory-jobs",
            max_instances=1,  # one tick at a time; a slow tick delays the next
            coalesce=True,
            # A tick that comes late (the loop busy with the rest of start-up, or a slow tick
            # before it) runs late, once, instead of being skipped with a "missed by" warning.
            misfire_grace_time=None,
            next_run_time=datetime.now(UTC),
        )
        scheduler.start()
        self._scheduler = scheduler
        return repaired

    async def recover(self) -> int:
        """Release leases of dead processes of this instance, collapse missed runs, and make
        sure every realm with memory has its expiry job."""
        states = await self.repo.list_jobs()
        dead = sorted(
            {
                s.lease_owner
                for s in states
                if s.status is JobStatus.LEASED
                and s.lease_owner is not None
                and self._owner_is_dead(s.lease_owner)
            }
        )
        repaired = 0
        for owner in dead:
            repaired += await recover_jobs(
                self.repo, clock=self.clock, policy_for=self.policy_for, dead_owner=owner
            )
        repaired += await recover_jobs(self.repo, clock=self.clock, policy_for=self.policy_for)
        realms = {JobScope.parse(s.scope_key).realm_id for s in states if _parses(s.scope_key)}
        for realm in sorted(realms):
            await ensure_job(self.repo, JobType.EXPIRY, realm, due_at=self.clock.now())
        if repaired:
            log.info("memory jobs: %d job state(s) recovered on start", repaired)
        return repaired

    def _owner_is_dead(self, owner: str) -> bool:
        """Whether a lease owner is a process of this instance that no longer runs (an
        earlier scheduler of this very process counts as dead: only one runs at a time)."""
        instance, _, rest = owner.partition(":")
        pid_text = rest.partition(":")[0]
        if instance != self.instance or owner == self.owner or not pid_text.isdigit():
            return False
        pid = int(pid_text)
        return pid == os.getpid() or not _process_alive(pid)

    async def tick(self) -> list[JobOutcome]:
        """Run every due memory job once (at most ``max_jobs_per_tick``)."""
        now = self.clock.now()
        due = [
            state
            for state in await self.repo.list_jobs()
            if should_run(state, now).run or lease_expired(state, now)
        ]
        due = await self._sessions_with_memory(due)
        due.sort(key=lambda s: (s.next_run_at or now, s.key))
        batch = due[: self.max_jobs_per_tick]
        return list(await asyncio.gather(*(self._run_limited(s) for s in batch)))

    async def _sessions_with_memory(self, states: list[JobState]) -> list[JobState]:
        """The states whose session (if the job has one) has its memory on: a session that
        switched memory off runs no memory jobs (its states stay as they are)."""
        known: dict[str, bool] = {}
        kept: list[JobState] = []
        for state in states:
            session = (
                JobScope.parse(state.scope_key).session_id if _parses(state.scope_key) else None
            )
            if session:
                if session not in known:
                    known[session] = await self.memory_on(session)
                if not known[session]:
                    continue
            kept.append(state)
        return kept

    async def _run_limited(self, state: JobState) -> JobOutcome:
        async with self._limit:
            return await self.run(state.job_type, state.scope_key)

    async def run(self, job_type: JobType, scope_key: str) -> JobOutcome:
        """One tick of one job: lease it if due, run its body, store the outcome."""

        async def work(leased: JobState) -> None:
            head: int | None = None
            barriers: tuple[int, ...] = ()
            if leased.job_type in (JobType.COMPACT, JobType.DECAY):
                head, barriers = await self.floors(JobScope.parse(leased.scope_key))
            await self.service.run_job(leased, head_floor=head, barrier_floors=barriers)

        outcome = await run_job_once(
            self.repo,
            job_type=job_type,
            scope_key=scope_key,
            owner=self.owner,
            clock=self.clock,
            policy=self.policy_for(job_type),
            work=work,
        )
        if outcome.state is not None and outcome.state.status is JobStatus.DEAD_LETTER:
            log.error("memory job %s:%s is dead: %s", job_type, scope_key, outcome.reason)
        elif outcome.reason and outcome.kind.value == "failed":
            log.warning("memory job %s:%s failed: %s", job_type, scope_key, outcome.reason)
        return outcome

    async def _tick_job(self) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._ticks.add(task)
        try:
            await self.tick()
        except EngineError:
            log.exception("memory job tick failed")
        finally:
            if task is not None:
                self._ticks.discard(task)

    async def shutdown(self, *, grace_s: float = SHUTDOWN_GRACE_S) -> None:
        """Stop ticking, let a running tick finish (cancel it after ``grace_s``), and stop
        APScheduler. A cancelled run is recorded as a retryable failure of its job."""
        scheduler, self._scheduler = self._scheduler, None
        if scheduler is None:
            return
        scheduler.pause()
        running = set(self._ticks)
        if running:
            _, pending = await asyncio.wait(running, timeout=grace_s)
            for task in pending:
                task.cancel()
            for task in pending:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        scheduler.shutdown(wait=False)
        # APScheduler finishes its shutdown on the next turn of the event loop.
        await asyncio.sleep(0)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0 only asks whether the process exists
    except ProcessLookupError:
        return False
    except OSError:  # e.g. PermissionError: it exists but belongs to someone else
        return True
    return True


def _parses(scope_key: str) -> bool:
    try:
        JobScope.parse(scope_key)
    except EngineError:
        return False
    return True


def timeline_floors(timeline: TimelineService) -> ScopeFloors:
    """:data:`ScopeFloors` from the timeline: a branch scope's head floor and the floors its
    child branches fork after (other scopes, or a branch that is gone: unknown)."""

    async def floors(scope: JobScope) -> tuple[int | None, tuple[int, ...]]:
        if scope.scope is not MemoryScope.BRANCH or not (scope.scope_id or "").isdigit():
            return None, ()
        branch_id = int(scope.scope_id or "0")
        try:
            head = await timeline.head(branch_id)
            barriers: tuple[int, ...] = ()
            if scope.session_id is not None and scope.session_id.isdigit():
                children = await timeline.branches(int(scope.session_id))
                barriers = tuple(
                    sorted(
                        {
                            b.fork_floor
                            for b in children
                            if b.parent_id == branch_id and b.fork_floor is not None
                        }
                    )
                )
        except NotFoundError:
            return None, ()
        return head, barriers

    return floors


def session_memory_on(storage: SqlStorage) -> SessionMemoryOn:
    """:data:`SessionMemoryOn` from the sessions' settings (a session that is gone: off)."""

    async def memory_on(session_id: str) -> bool:
        if not session_id.isdigit():
            return True
        try:
            async with storage.unit_of_work() as uow:
                session = await uow.sessions.get(int(session_id))
        except NotFoundError:
            return False
        return memory_enabled(session.settings)

    return memory_on


def build_memory_service(
    storage: SqlStorage,
    *,
    model: ChatModel | None,
    model_name: str,
    events: EventSink | None = None,
    clock: Clock | None = None,
    settings: MemorySettings | None = None,
    embedder: Embedder | None = None,
) -> MemoryService:
    """The memory service on the SQL storage, counting tokens with ``model_name``'s tokenizer;
    compaction uses ``model`` (the offline provider, or no model: the offline summariser);
    with an ``embedder`` ranking is hybrid and units are embedded by the ``embed`` job."""
    counter = counter_for_model(model_name)
    semantic = (
        None if embedder is None else SemanticMemory(embedder, SqlVectorStore(storage.engine))
    )
    return MemoryService(
        SqlMemoryRepository(storage.engine),
        count=counter.count,
        clock=clock or SystemClock(),
        model=model,
        model_name=model_name,
        events=events,
        settings=settings,
        semantic=semantic,
    )


async def start_memory_jobs(
    service: MemoryService,
    *,
    timeline: TimelineService | None = None,
    clock: Clock | None = None,
    instance: str = DEFAULT_INSTANCE,
    memory_on: SessionMemoryOn | None = None,
) -> MemoryScheduler:
    """Recover and start the memory jobs of ``service`` (``memory_on``: which sessions have
    their memory on, see :func:`session_memory_on`); stop them with
    ``await scheduler.shutdown()``."""
    scheduler = MemoryScheduler(
        service.repo,
        service,
        clock=clock or service.clock,
        instance=instance,
        floors=timeline_floors(timeline) if timeline is not None else None,
        memory_on=memory_on,
    )
    await scheduler.start()
    return scheduler
