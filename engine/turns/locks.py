"""One generation at a time per branch: the :class:`BranchOrder` port and its in-process
implementation.

A turn holds the order of its ``(session, branch)`` from recording the input to the commit.
``asyncio.Lock`` wakes waiters first come, first served, so messages sent while a reply is
being generated become the next floors in the order they arrived. Different branches have
different locks and run in parallel. :class:`BranchLocks` orders the turns of one process (all
a SQLite database needs: it is single-host, one process at a time); on PostgreSQL the
composition uses an implementation that also takes an advisory lock, so turns of one branch
queue across processes too. (Should two processes still meet, the timeline's compare-and-set
and ``BranchBusyError`` refuse the second generation.)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Protocol


class BranchOrder(Protocol):
    """Turns of one ``(session, branch)`` one at a time, in the order they asked."""

    def hold(self, session_id: int, branch: str) -> AbstractAsyncContextManager[None]:
        """Wait for the branch, then hold it for the duration of the block; a waiter that
        is cancelled leaves the queue without holding anything."""
        ...


@dataclass(slots=True)
class _Entry:
    lock: asyncio.Lock
    users: int = 0


class BranchLocks:
    """Per-branch locks, created on demand and dropped when nobody holds or waits for them."""

    def __init__(self) -> None:
        self._entries: dict[tuple[int, str], _Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def busy(self, session_id: int, branch: str) -> bool:
        """Whether a turn holds (or waits for) the branch."""
        entry = self._entries.get((session_id, branch))
        return entry is not None and entry.users > 0

    @asynccontextmanager
    async def hold(self, session_id: int, branch: str) -> AsyncIterator[None]:
        """Hold the branch's lock for the duration of the block (FIFO among waiters)."""
        key = (session_id, branch)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(lock=asyncio.Lock())
        entry.users += 1
        try:
            async with entry.lock:
                yield
        finally:
            entry.users -= 1
            if entry.users == 0 and self._entries.get(key) is entry:
                del self._entries[key]
