"""Long polling by exactly one process at a time: the leader holds a role lease.

Telegram answers ``409 Conflict`` when two ``getUpdates`` of one bot overlap, so with several
processes only the holder of the role ``telegram-poller:<bot id>`` polls. :class:`PollerLeader`
tries to take (or renew) the role every third of its lease; a stand-by process takes it over
once the leader's lease has expired (the leader was killed or hangs), and a clean stop releases
it at once. A leader that could not renew for :data:`STOP_FRACTION` of its lease stops polling
before the lease can expire, so two pollers never overlap (the processes' clocks must agree to
well within the lease, as NTP keeps them).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Final, Protocol

from adapters.telegram.updates_seen import utc_now

log = logging.getLogger("tavernbot.telegram.leader")

ROLE_PREFIX: Final = "telegram-poller:"
"""The role's name before the bot id."""
RENEW_FRACTION: Final = 1 / 3
"""The role is renewed (or tried) every this share of its lease."""
STOP_FRACTION: Final = 2 / 3
"""A leader whose last renewal is older than this share of its lease stops polling."""


class RoleStore(Protocol):
    """Where role leases live (the database, shared by every process)."""

    async def acquire_role(
        self, role: str, holder: str, now: datetime, expires_at: datetime
    ) -> bool:
        """Take or renew ``role`` for ``holder``; False while another holder's lease runs."""
        ...

    async def release_role(self, role: str, holder: str) -> None:
        """Give the role up if ``holder`` holds it."""
        ...


class PollerLeader:
    """Start polling while this process holds the role, stop when it does not."""

    def __init__(
        self,
        store: RoleStore,
        *,
        bot_id: int,
        holder: str,
        lease_s: float,
        start: Callable[[], Awaitable[None]],
        stop: Callable[[], Awaitable[None]],
    ) -> None:
        if lease_s <= 0:
            raise ValueError(f"the poller lease must be positive, not {lease_s} s")
        self.store = store
        self.role = f"{ROLE_PREFIX}{bot_id}"
        self.holder = holder
        self.lease_s = lease_s
        self._start = start
        self._stop = stop
        self.polling = False
        self._renewed_at = 0.0

    async def _try(self) -> bool:
        now = utc_now()
        try:
            # Bounded: a hanging database must not keep this process polling past its lease.
            async with asyncio.timeout(self.lease_s * RENEW_FRACTION):
                got = await self.store.acquire_role(
                    self.role, self.holder, now, now + timedelta(seconds=self.lease_s)
                )
        except Exception:  # the database hiccuped: keep polling only while the lease surely runs
            log.exception("could not renew the %s role", self.role)
            return self.polling and (
                time.monotonic() - self._renewed_at < self.lease_s * STOP_FRACTION
            )
        if got:
            self._renewed_at = time.monotonic()
        return got

    async def step(self) -> None:
        """Take or renew the role once, and start or stop polling to match."""
        leader = await self._try()
        if leader and not self.polling:
            log.info("this process leads: it polls Telegram (%s)", self.role)
            await self._start()
            self.polling = True
        elif not leader and self.polling:
            log.warning("the %s role was lost; polling stops", self.role)
            self.polling = False
            await self._stop()

    async def run(self) -> None:
        """Call :meth:`step` every renewal period until cancelled (an owned task)."""
        while True:
            await asyncio.sleep(self.lease_s * RENEW_FRACTION)
            try:
                await self.step()
            except Exception:  # polling failed to start: try again at the next period
                log.exception("taking the %s role failed", self.role)

    async def close(self) -> None:
        """Stop polling if this process polls, and release the role for the next leader."""
        if self.polling:
            self.polling = False
            await self._stop()
        try:
            await self.store.release_role(self.role, self.holder)
        except Exception:  # the role's lease runs out by itself; stopping must go on
            log.exception("could not release the %s role", self.role)
