"""One generation at a time per branch, inside this process.

A turn holds the lock of its ``(session, branch)`` from recording the input to the commit.
``asyncio.Lock`` wakes waiters first come, first served, so messages sent while a reply is
being generated become the next floors in the order they arrived. Different branches have
different locks and run in parallel. (Across processes the timeline's compare-and-set and
``BranchBusyError`` refuse a second generation.)
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass


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
