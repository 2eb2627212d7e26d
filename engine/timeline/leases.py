"""Process leases: which process a generating floor or pending page belongs to, and whether
that process still lives.

Every process that runs turns has an owner id (random, new at each start) and a lease row it
renews every :data:`LEASE_HEARTBEAT_S`. Floors and pages it opens record that owner. Start-up
recovery, and the heartbeat's sweep after it, fail only the work of owners that are dead:

- a lease not renewed before its ``expires_at`` (:data:`LEASE_EXPIRY_S` after the last
  heartbeat) is dead: the process stopped or hangs;
- a lease of this host (and process-id namespace) whose process id no longer runs is dead at
  once, so a process restarted after a crash (SIGKILL) recovers its own interrupted turn
  without waiting for the expiry;
- an owner without a lease (it stopped cleanly, or never took one) and rows from before leases
  (no owner) are dead.

So a second process started on the same database never fails a turn the first is still
generating (DESIGN.md section 10, "Several processes").
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime, timedelta
from typing import Final

from engine.ports import Clock, ProcessLease, Storage, UnitOfWork

log = logging.getLogger(__name__)

LEASE_HEARTBEAT_S: Final = 10.0
"""Seconds between two renewals of a process's lease (and sweeps for dead owners' turns)."""
LEASE_EXPIRY_S: Final = 60.0
"""Seconds after its last heartbeat when a lease is dead: several missed heartbeats, so a
busy process is never taken for dead."""
OWNER_ID_BYTES: Final = 8
"""Random bytes of an owner id (16 hex characters)."""
MAX_HOST_CHARS: Final = 200
"""Characters of a host identity stored with a lease (the column's size)."""


def this_host() -> str:
    """Where process ids mean the same process: the host name, plus the process-id namespace
    where the system names it (two containers may share a host name, never a namespace)."""
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = ""
    return f"{socket.gethostname()} {namespace}".strip()[:MAX_HOST_CHARS]


def pid_running(pid: int) -> bool:
    """Whether a process with id ``pid`` runs on this host (signal 0 probes without
    signalling; a process of another user still counts as running)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LeaseKeeper:
    """This process's lease: its owner id, renewal, release, and who else is dead.

    ``clock`` decides expiry (tests advance it instead of sleeping); ``host``, ``pid`` and
    ``running`` identify processes of this host (tests pass their own)."""

    def __init__(
        self,
        storage: Storage,
        *,
        clock: Clock,
        owner: str | None = None,
        host: str | None = None,
        pid: int | None = None,
        running: Callable[[int], bool] = pid_running,
        heartbeat_s: float = LEASE_HEARTBEAT_S,
        expiry_s: float = LEASE_EXPIRY_S,
    ) -> None:
        if not 0 < heartbeat_s < expiry_s:
            raise ValueError(
                f"lease heartbeat {heartbeat_s} s must be positive and below the expiry "
                f"{expiry_s} s"
            )
        self._storage = storage
        self._clock = clock
        self.owner = owner or secrets.token_hex(OWNER_ID_BYTES)
        self.host = host if host is not None else this_host()
        self.pid = pid if pid is not None else os.getpid()
        self._running = running
        self.heartbeat_s = heartbeat_s
        self.expiry_s = expiry_s

    def lease(self, now: datetime) -> ProcessLease:
        """This process's lease as renewed at ``now``."""
        return ProcessLease(
            owner=self.owner,
            host=self.host,
            pid=self.pid,
            heartbeat_at=now,
            expires_at=now + timedelta(seconds=self.expiry_s),
        )

    async def renew(self) -> None:
        """Store this process's lease, valid for :attr:`expiry_s` from now."""
        async with self._storage.unit_of_work() as uow:
            await uow.leases.renew(self.lease(self._clock.now()))

    async def release(self) -> None:
        """Delete this process's lease (a clean stop: nothing of it is generating any more)."""
        async with self._storage.unit_of_work() as uow:
            await uow.leases.release(self.owner)

    def alive(self, lease: ProcessLease, now: datetime) -> bool:
        """Whether ``lease`` still stands for a live process at ``now``."""
        if lease.owner == self.owner:
            return True
        if lease.expires_at <= now:
            return False
        return lease.host != self.host or self._running(lease.pid)

    async def dead_owners(self, uow: UnitOfWork, owners: Iterable[str | None]) -> set[str | None]:
        """Of ``owners`` (None: a row from before leases), those whose work may be failed."""
        owners = list(owners)
        wanted = {o for o in owners if o is not None and o != self.owner}
        now = self._clock.now()
        leases = {lease.owner: lease for lease in await uow.leases.of_owners(sorted(wanted))}
        dead: set[str | None] = {None} if None in owners else set()
        for owner in wanted:
            lease = leases.get(owner)
            if lease is None or not self.alive(lease, now):
                dead.add(owner)
        return dead

    async def keep(self, sweep: Callable[[], Awaitable[object]] | None = None) -> None:
        """Renew the lease every :attr:`heartbeat_s` and run ``sweep`` (recovery of dead
        owners' turns) after each renewal, until cancelled. A failed renewal or sweep is
        logged and tried again at the next beat."""
        while True:
            await asyncio.sleep(self.heartbeat_s)
            try:
                await self.renew()
                if sweep is not None:
                    await sweep()
            except Exception:  # the heartbeat must outlive a database hiccup
                log.exception("lease heartbeat failed; trying again in %s s", self.heartbeat_s)
