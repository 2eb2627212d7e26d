"""SQLite statements on the event loop's own thread, without aiosqlite's driver thread.

aiosqlite runs every call (open a cursor, execute, fetch, close) on a thread of its own and
wakes the event loop when it is done: four hand-offs per statement, which on a busy machine
cost more than the statement itself (a turn's statements on a local WAL database take
microseconds each). Here SQLAlchemy's aiosqlite dialect keeps all it does, but the driver
connection underneath calls :mod:`sqlite3` directly. SQLAlchemy has no public hook for a
driver connection of our own, so this subclasses its private aiosqlite adapter classes; the
versions that is known to work with are :data:`TESTED_SQLALCHEMY`.

Nothing waits on the event loop's thread for another writer: the connection's own busy
timeout is 0, and a statement that finds the database locked is retried after
``asyncio.sleep`` pauses (``BUSY_RETRY_FIRST`` doubling up to ``BUSY_RETRY_MAX``) until the
storage's busy timeout has passed. SQLite allows retrying a statement, COMMIT included, after
``SQLITE_BUSY``. A statement's own CPU time is now spent on the loop's thread; it is small next
to the Python-side handling of the rows, which ran there before too (exporting 10,000 floors
stalled the loop for at most ~170 ms with this driver and ~185 ms with aiosqlite's thread).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_dbapi,
)

TESTED_SQLALCHEMY: Final = ((2, 1, 9), (2, 2))
"""The SQLAlchemy versions this shim is checked against, lowest included, highest excluded
(``pyproject.toml`` pins the same range). The adapter classes subclassed below are private to
SQLAlchemy: tests/test_storage/test_sqlalchemy_canary.py fails on any other version and checks
that the private names used here still exist."""

BUSY_RETRY_FIRST: Final = 0.001
"""Seconds before the first retry of a statement that found the database locked."""
BUSY_RETRY_MAX: Final = 0.05
"""The longest pause between two retries."""

_T = TypeVar("_T")


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class InlineCursor:
    """The async cursor SQLAlchemy's adapter expects, over a :class:`sqlite3.Cursor`."""

    __slots__ = ("_cursor", "_owner")

    def __init__(self, owner: InlineConnection, cursor: sqlite3.Cursor) -> None:
        self._owner = owner
        self._cursor = cursor

    async def __aenter__(self) -> InlineCursor:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        self._cursor.close()

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value

    async def execute(self, sql: str, parameters: Any = ()) -> InlineCursor:
        """Run one statement (retried while the database is locked)."""
        await self._owner.run(self._cursor.execute, sql, parameters)
        return self

    async def executemany(self, sql: str, parameters: Any) -> InlineCursor:
        """Run one statement for each parameter set."""
        await self._owner.run(self._cursor.executemany, sql, parameters)
        return self

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        return self._cursor.fetchmany(self._cursor.arraysize if size is None else size)

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def close(self) -> None:
        self._cursor.close()

    async def nextset(self) -> None:
        return None

    async def setinputsizes(self, *_sizes: Any) -> None:
        return None


class InlineConnection:
    """The async connection SQLAlchemy's adapter expects, over a :class:`sqlite3.Connection`."""

    def __init__(self, connection: sqlite3.Connection, busy_timeout: float) -> None:
        self._connection: sqlite3.Connection | None = connection
        self.busy_timeout = busy_timeout

    @property
    def raw(self) -> sqlite3.Connection:
        """The open sqlite3 connection (closed connections raise as aiosqlite's do)."""
        if self._connection is None:
            raise ValueError("no active connection")
        return self._connection

    @property
    def isolation_level(self) -> str | None:
        return self.raw.isolation_level

    @isolation_level.setter
    def isolation_level(self, value: str | None) -> None:
        # sqlite3 types the level as a few literals; SQLAlchemy passes None (autocommit).
        self.raw.isolation_level = cast(Any, value)

    async def run(self, call: Callable[..., _T], *args: Any) -> _T:
        """``call(*args)``, retried after pauses while SQLite reports the database locked."""
        deadline: float | None = None
        pause = BUSY_RETRY_FIRST
        while True:
            try:
                return call(*args)
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
                now = asyncio.get_running_loop().time()
                deadline = now + self.busy_timeout if deadline is None else deadline
                if now >= deadline:
                    raise
                await asyncio.sleep(pause)
                pause = min(pause * 2, BUSY_RETRY_MAX)

    def cursor(self) -> InlineCursor:
        return InlineCursor(self, self.raw.cursor())

    async def commit(self) -> None:
        await self.run(self.raw.commit)

    async def rollback(self) -> None:
        self.raw.rollback()

    async def close(self) -> None:
        self.stop()

    def stop(self) -> None:
        """Close now (SQLAlchemy's forced termination)."""
        if self._connection is not None:
            connection, self._connection = self._connection, None
            connection.close()

    async def create_function(self, *args: Any, **kwargs: Any) -> None:
        self.raw.create_function(*args, **kwargs)


class _AdaptedInline(AsyncAdapt_aiosqlite_connection):
    """SQLAlchemy's aiosqlite adapter with the isolation level set directly (the base class
    queues that on aiosqlite's thread)."""

    __slots__ = ()

    @property
    def isolation_level(self) -> str | None:
        return cast("str | None", self._connection.isolation_level)

    @isolation_level.setter
    def isolation_level(self, value: str | None) -> None:
        self._connection.isolation_level = value


class InlineSQLiteDBAPI(AsyncAdapt_aiosqlite_dbapi):
    """The DBAPI module to give ``create_async_engine(..., module=...)`` for an
    ``sqlite+aiosqlite`` URL: same dialect, statements run inline."""

    def __init__(self, busy_timeout: float) -> None:
        super().__init__(aiosqlite, sqlite3)
        self.busy_timeout = busy_timeout

    def connect(self, *args: Any, **kwargs: Any) -> _AdaptedInline:
        kwargs.pop("async_creator_fn", None)
        kwargs["check_same_thread"] = False
        # The loop must never sleep inside SQLite's busy handler: see InlineConnection.run.
        kwargs["timeout"] = 0
        connection = sqlite3.connect(*args, **kwargs)
        # InlineConnection has the members of SQLAlchemy's async DBAPI connection protocol
        # that the adapter uses, not the catch-all __getattr__ the protocol declares.
        inline: Any = InlineConnection(connection, self.busy_timeout)
        return _AdaptedInline(self, inline)
