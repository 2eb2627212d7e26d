"""SQLite is single-host, one bot process at a time: a lock file held for the process's life.

The per-branch order of turns is an in-process lock on SQLite (advisory locks are PostgreSQL's),
so two ``tavernbot run``/``chat`` processes on one SQLite file could race on a branch. The
second one therefore waits: :func:`hold_sqlite_file` takes an exclusive ``flock`` on a sibling
file (``<database>.lock``), says once that it waits (``another tavernbot process is using
<file>; waiting...``) and tries again every :data:`RETRY_S` until the first process ends. The
operating system drops the lock when the process ends, however it ends (even SIGKILL), so a
crash never leaves a stale lock behind. Short commands (imports, memory search) do not take it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from sqlalchemy.engine import make_url

RETRY_S: Final = 0.5
"""Seconds between two tries for a lock file another process holds."""
LOCK_SUFFIX: Final = ".lock"
"""Added to the database file's name to name its lock file."""


def lock_path(url: str) -> Path | None:
    """The lock file of SQLite database ``url``; None for an in-memory database (nothing
    another process could share)."""
    database = make_url(url).database or ""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    path = Path(database).expanduser().resolve()
    return path.with_name(path.name + LOCK_SUFFIX)


def waiting_message(path: Path) -> str:
    """The one line printed while another process holds the database's lock file."""
    database = path.with_name(path.name.removesuffix(LOCK_SUFFIX))
    return f"another tavernbot process is using {database}; waiting for it to stop..."


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@asynccontextmanager
async def hold_sqlite_file(url: str, *, on_wait: Callable[[str], None]) -> AsyncIterator[None]:
    """Hold the lock file of SQLite database ``url`` for the duration of the block, waiting
    (cancellable) while another process holds it; ``on_wait`` gets the message once."""
    path = lock_path(url)
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if not _try_lock(fd):
            on_wait(waiting_message(path))
            # Another process's lock gives nothing to await: try again now and then (a
            # blocking flock on a thread could not be cancelled).
            while True:
                await asyncio.sleep(RETRY_S)
                if _try_lock(fd):
                    break
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
