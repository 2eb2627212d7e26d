"""This process's lease and crash recovery: taking the lease on start, failing the turns dead
processes left in progress, and renewing or giving the lease up (see
:mod:`engine.timeline.leases`)."""

from __future__ import annotations

import asyncio

from engine.prompt.tokens import counter_for_model
from engine.timeline.leases import LeaseKeeper
from engine.timeline.service import Claims, TimelineService
from engine.timeline.values import Floor
from engine.turns.api import SessionKey

__all__ = ["Recovery"]


class Recovery:
    """The lease of this process and the sweep for dead processes' turns."""

    def __init__(self, leases: LeaseKeeper, timeline: TimelineService, *, model: str) -> None:
        self._leases = leases
        self._timeline = timeline
        self._model = model  # the default profile's model, whose tokenizer start warms up
        self._only: SessionKey | None = None  # the session recovery is limited to
        self._claims: Claims | None = None  # the sessions this process can tell

    async def start(
        self, *, only: SessionKey | None = None, claims: Claims | None = None
    ) -> list[Floor]:
        """Take this process's lease, then recover from a crash (see :meth:`sweep`);
        ``only`` limits this, and every later sweep, to one session, ``claims(platform,
        realm)`` to the sessions this process can tell that their reply was interrupted."""
        # Loading the tokenizer tables takes seconds of CPU: do it on a worker thread now,
        # not on the event loop during the first turn.
        model = self._model
        await asyncio.to_thread(lambda: counter_for_model(model).count("warm up"))
        await self._leases.renew()
        self._only = only
        self._claims = claims
        return await self.sweep()

    async def sweep(self) -> list[Floor]:
        """Fail the turns dead processes left in progress: floors left draft or generating
        and pages left pending (a committed floor keeps its active page); a live process's
        turns are left alone."""
        only = self._only
        session_id: int | None = None
        if only is not None:
            found = await self._timeline.find_session(only.platform, only.key)
            if found is None:
                return []
            session_id = found.id
        return await self._timeline.recover(
            self._leases, session_id=session_id, claims=self._claims
        )

    async def keep(self) -> None:
        """Renew the lease and sweep after each renewal until cancelled."""
        await self._leases.keep(self.sweep)

    async def release(self) -> None:
        """Give the lease up on a clean stop."""
        await self._leases.release()
