"""Turns of one branch in order across processes: PostgreSQL advisory locks.

:class:`AdvisoryBranchLocks` implements :class:`~engine.turns.locks.BranchOrder` in two steps:

1. the in-process FIFO lock (:class:`~engine.turns.locks.BranchLocks`), so the messages of
   one process queue in the order they arrived without each waiting in the database;
2. ``pg_advisory_lock(key)`` on a connection of its own, kept for the whole hold (the model
   call included) in autocommit, so no transaction stays open while the model answers;
   ``pg_advisory_unlock(key)`` in ``finally`` gives it back. PostgreSQL grants a lock's
   waiters in the order they asked, so messages sent to two processes queue across them.

The key is a stable 64-bit hash of ``(session id, branch name)`` (:func:`branch_key`): two
branches that happen to share a key only wait for each other (extra serialisation, never a
lost or doubled turn). Lock connections come from a pool of their own, at most
:data:`MAX_LOCK_CONNECTIONS` per process: a branch past that waits here for a free one
(first come, first served) instead of taking the connections the turns' units of work need.

A waiter cancelled while PostgreSQL still queues it (or a release that fails) closes its
connection instead of returning it to the pool: the server drops every lock of a closed
session, so nothing is left held by a connection nobody owns.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Final

from sqlalchemy import BigInteger, bindparam, func, select
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from adapters.storage.database import ping_when_idle
from adapters.storage.direct import DirectRunner
from engine.turns.locks import BranchLocks

log = logging.getLogger(__name__)

MAX_LOCK_CONNECTIONS: Final = 16
"""Branches one process may hold (or wait for) in PostgreSQL at the same time; each holds a
connection of its own for as long as its turn runs."""
KEY_DOMAIN: Final = b"tavernbot-branch\x00"
"""Mixed into every key, so other users of advisory locks on the database rarely meet ours."""


ADVISORY_LOCK: Final = select(func.pg_advisory_lock(bindparam("key", type_=BigInteger)))
ADVISORY_UNLOCK: Final = select(func.pg_advisory_unlock(bindparam("key", type_=BigInteger)))
"""Taking and giving back a branch's lock: prebuilt, and run on the driver connection
(:mod:`adapters.storage.direct`) in the lock connection's autocommit mode."""


def branch_key(session_id: int, branch: str) -> int:
    """The advisory lock key of ``(session_id, branch)``: a signed 64-bit hash, the same in
    every process and every run."""
    digest = hashlib.blake2b(
        KEY_DOMAIN + f"{session_id}\x00{branch}".encode(), digest_size=8
    ).digest()
    return int.from_bytes(digest, "big", signed=True)


class AdvisoryBranchLocks:
    """Per-branch order within this process and across every process on the database."""

    def __init__(self, url: URL | str, *, max_connections: int = MAX_LOCK_CONNECTIONS) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, not {max_connections}")
        self.max_connections = max_connections
        self._local = BranchLocks()
        self._slots = asyncio.Semaphore(max_connections)
        # Autocommit: a lock held across the model call never holds a transaction open.
        # A pooled lock connection is pinged only after it sat idle (as the units of work's
        # are): a ping at every checkout was three round trips per turn.
        self._engine: AsyncEngine = create_async_engine(
            url, isolation_level="AUTOCOMMIT", pool_size=max_connections, max_overflow=0
        )
        ping_when_idle(self._engine)

    @classmethod
    def for_engine(
        cls, engine: AsyncEngine, *, max_connections: int = MAX_LOCK_CONNECTIONS
    ) -> AdvisoryBranchLocks:
        """Locks on the database ``engine`` connects to (advisory locks are per database, so
        a schema set on ``engine`` does not matter)."""
        return cls(engine.url, max_connections=max_connections)

    def busy(self, session_id: int, branch: str) -> bool:
        """Whether a turn of this process holds (or waits for) the branch."""
        return self._local.busy(session_id, branch)

    @asynccontextmanager
    async def hold(self, session_id: int, branch: str) -> AsyncIterator[None]:
        """Hold the branch in this process, then in PostgreSQL, for the duration of the
        block (see the module docstring)."""
        key = branch_key(session_id, branch)
        async with self._local.hold(session_id, branch), self._slots:
            conn = await self._engine.connect()
            try:
                await DirectRunner(conn).execute(ADVISORY_LOCK, {"key": key})
            except BaseException:
                # Cancelled (or failed) while queued: the lock may have been granted at that
                # very moment, so the connection goes, and the server drops its locks.
                await _discard(conn)
                raise
            try:
                yield
            finally:
                await _release(conn, key)

    async def aclose(self) -> None:
        """Close the lock connections (after the last turn ended)."""
        await self._engine.dispose()


async def _release(conn: AsyncConnection, key: int) -> None:
    """Unlock ``key`` and return the connection; a connection that cannot say it unlocked
    is closed instead (which unlocks too)."""
    try:
        unlocked = (await DirectRunner(conn).execute(ADVISORY_UNLOCK, {"key": key})).scalar()
    except BaseException:
        await _discard(conn)
        raise
    if not unlocked:  # the server lost the session meanwhile: nothing of ours is held
        log.warning("branch lock %s was no longer held when its turn ended", key)
    await conn.close()


async def _discard(conn: AsyncConnection) -> None:
    """Close ``conn`` for good (never back to the pool): its session's locks go with it."""
    with suppress(Exception):
        await conn.invalidate()
    with suppress(Exception):
        await conn.close()


def branch_order_for(engine: AsyncEngine) -> BranchLocks | AdvisoryBranchLocks:
    """The branch order for the database of ``engine``: advisory locks on PostgreSQL, the
    in-process order on SQLite (single-host: one process at a time, see
    :mod:`adapters.storage.sqlite_guard`)."""
    if engine.dialect.name == "postgresql":
        return AdvisoryBranchLocks.for_engine(engine)
    return BranchLocks()
