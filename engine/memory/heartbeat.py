"""The lease heartbeat of one running memory job.

While a job runs, :class:`JobHeartbeat` renews its lease every
:attr:`~engine.memory.jobs.JobPolicy.renew_interval`, with compare-and-set, so no other worker
finds the lease expired and takes the job over. When a renewal is refused because the run
passed its timeout (by the injected clock, the one leases expire by), or because another
worker changed the job meanwhile, the heartbeat stops the run: a job never runs beside
another worker's run of it.

The renewals run in a task the heartbeat owns: leaving ``async with`` stops that task and
awaits it, never in the middle of storing a renewal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType

from engine.memory.errors import JobTransitionError
from engine.memory.jobs import JobPolicy, JobState, renew, timed_out
from engine.memory.ports import MemoryRepository
from engine.ports import Clock

log = logging.getLogger(__name__)

Pause = Callable[[float], Awaitable[None]]
"""Waits the given seconds between two renewals (:func:`asyncio.sleep`; tests pass their own)."""


class JobHeartbeat:
    """Keeps one leased job's lease alive while it runs; see the module docstring.

    ``state`` is the job as last stored by this worker (the lease as last renewed): the run's
    outcome is stored over it. ``timed_out`` or ``lost`` say why the heartbeat stopped a run.
    """

    def __init__(
        self,
        repo: MemoryRepository,
        leased: JobState,
        *,
        clock: Clock,
        policy: JobPolicy,
        pause: Pause = asyncio.sleep,
    ) -> None:
        if leased.lease_owner is None:
            raise JobTransitionError(f"job {leased.key} is not leased; nothing to renew")
        self.state = leased
        self.owner = leased.lease_owner
        self.timed_out = False
        self.lost: str | None = None
        self._repo = repo
        self._clock = clock
        self._policy = policy
        self._pause = pause
        self._stopped = asyncio.Event()
        self._storing = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> JobHeartbeat:
        if self._task is not None:
            raise RuntimeError(f"the heartbeat of job {self.state.key} is already running")
        self._task = asyncio.get_running_loop().create_task(
            self._beat(), name=f"lease-heartbeat:{self.state.key}"
        )
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    async def stop(self) -> None:
        """Stop renewing (after a renewal being stored is stored) and await the task."""
        task, self._task = self._task, None
        if task is None:
            return
        async with self._storing:
            task.cancel()
        await asyncio.wait({task})
        error = None if task.cancelled() else task.exception()
        if error is not None:  # a bug in the heartbeat itself
            raise error

    async def run(self, work: Callable[[JobState], Awaitable[None]]) -> bool:
        """Run ``work`` on the leased job: True when it ended by itself (its exceptions
        propagate), False when the heartbeat stopped it (see ``timed_out`` and ``lost``)."""
        job = asyncio.ensure_future(work(self.state))
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({job, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            job.cancel()
            stopped.cancel()
            await asyncio.wait({job, stopped})
        if job.cancelled() and self._stopped.is_set():
            return False
        job.result()
        return True

    async def _beat(self) -> None:
        seconds = self._policy.renew_interval.total_seconds()
        while True:
            await self._pause(seconds)
            async with self._storing:
                if not await self._renew():
                    self._stopped.set()
                    return

    async def _renew(self) -> bool:
        """Store a renewed lease; False when the run must stop."""
        now = self._clock.now()
        if timed_out(self.state, now, self._policy):
            self.timed_out = True
            return False
        try:
            renewed = renew(self.state, owner=self.owner, now=now, policy=self._policy)
        except JobTransitionError as exc:
            self.lost = str(exc)
            return False
        try:
            stored = await self._repo.save_job(renewed, expected_revision=self.state.revision)
        except Exception:  # a database hiccup: the lease has time left, try at the next beat
            log.exception("job %s: renewing the lease failed; trying again", self.state.key)
            return True
        if not stored:
            self.lost = (
                f"job {self.state.key}: changed by another worker while {self.owner} ran it"
            )
            return False
        self.state = renewed
        return True
