"""The unit of work: one ``AsyncSession``, one transaction, one task.

``async with storage.unit_of_work() as uow:`` begins a transaction, commits it when the block
ends normally and rolls it back when the block raises; ``storage.read()`` is the same for
reads only. A uniqueness violation or a lock that
could not be taken becomes :class:`engine.errors.ConflictError` at this edge; any other driver
error becomes :class:`engine.errors.StorageError` (logged under an error id, see
:mod:`engine.incidents`), so no SQL or parameter reaches a user.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Final

from sqlalchemy.engine import Connection, Engine, Transaction
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
)
from sqlalchemy.util import greenlet_spawn

from adapters.storage.asset_repo import SqlAssets
from adapters.storage.database import (
    READ_ONLY_OPTION,
    SQLITE_BUSY_TIMEOUT_MS,
    lost_to_another,
)
from adapters.storage.direct import DirectRunner
from adapters.storage.itemization_repo import SqlItemizations
from adapters.storage.lease_repo import SqlLeases
from adapters.storage.timeline_repos import (
    SqlBranches,
    SqlFloors,
    SqlLinks,
    SqlMessages,
    SqlPages,
    SqlRealms,
    SqlSessions,
)
from adapters.storage.variable_repos import SqlVariables
from engine.errors import ConflictError, StorageError
from engine.incidents import internal_error, new_error_id

STORAGE_FAILED: Final = "storage failed"
"""What a caller is told of an unexpected storage error (before its error id)."""

_log = logging.getLogger(__name__)


class SqlUnitOfWork:
    """The repositories bound to one open transaction."""

    def __init__(self, connection: AsyncConnection) -> None:
        # Repositories run Core statements on the transaction's connection, without an ORM
        # session's bookkeeping (a turn opens two units of work; a session per unit cost
        # more CPU than some of their statements).
        # The turn's prebuilt statements run on the driver connection (adapters.storage.direct).
        self.connection = connection
        self._db: AsyncSession | None = None
        direct = DirectRunner(connection)
        self.realms = SqlRealms(connection, direct)
        self.sessions = SqlSessions(connection, direct)
        self.branches = SqlBranches(connection, direct)
        self.floors = SqlFloors(connection, direct)
        self.pages = SqlPages(connection, direct)
        self.messages = SqlMessages(connection, direct)
        self.links = SqlLinks(connection, direct)
        self.assets = SqlAssets(connection, direct)
        self.variables = SqlVariables(connection, direct)
        self.leases = SqlLeases(connection)
        self.itemizations = SqlItemizations(connection, direct)

    @property
    def db(self) -> AsyncSession:
        """An ORM session in this unit's transaction, made on first use (the archive's
        export and import); it never commits or rolls back the transaction itself."""
        if self._db is None:
            self._db = AsyncSession(bind=self.connection, expire_on_commit=False, autoflush=False)
        return self._db

    async def _close_db(self) -> None:
        if self._db is not None:
            await self._db.close()


def _connect_and_begin(engine: Engine) -> tuple[Connection, Transaction]:
    """A pooled connection with its transaction begun (in SQLAlchemy's sync layer)."""
    connection = engine.connect()
    try:
        return connection, connection.begin()
    except BaseException:
        connection.close()
        raise


def _end(connection: Connection, transaction: Transaction, commit: bool) -> None:
    """Commit (or roll back) ``transaction``, then give ``connection`` back to the pool,
    whatever the commit did."""
    try:
        if commit:
            transaction.commit()
        else:
            transaction.rollback()
    finally:
        connection.close()


async def _finish(ending: Coroutine[Any, Any, None], *, in_place: bool) -> None:
    """Run ``ending`` (a commit or rollback and the connection's return) to its end even when
    the caller is cancelled meanwhile, re-raising the cancellation afterwards: a connection
    is never left half closed. ``in_place`` (SQLite): run it in the caller's task, where
    it waits only for another process's lock, and :func:`_end` still closes the connection
    when that wait is cancelled; otherwise (PostgreSQL) in a task of its own, as SQLAlchemy's
    own close does."""
    if in_place:
        await ending
        return
    task = asyncio.ensure_future(ending)
    cancelled: asyncio.CancelledError | None = None
    while True:
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError as exc:
            if task.done():
                raise
            cancelled = exc
        else:
            break
    if cancelled is not None:
        raise cancelled


class SqlStorage:
    """The storage port over one SQLAlchemy async engine (SQLite or PostgreSQL)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._readers = engine.execution_options(**{READ_ONLY_OPTION: True})
        # SQLite has one writer at a time. Writers of this process queue here, in order,
        # instead of in SQLite's busy handler (which polls with sleeps of up to 100 ms);
        # other processes still meet the busy timeout.
        self._writer = asyncio.Lock() if engine.dialect.name == "sqlite" else None

    def unit_of_work(self) -> AbstractAsyncContextManager[SqlUnitOfWork]:
        """A fresh unit of work; see the module docstring."""
        if self._writer is None:
            return self._open(self.engine)
        return self._queued(self._writer)

    def read(self) -> AbstractAsyncContextManager[SqlUnitOfWork]:
        """A unit of work for reads only (no write lock on SQLite)."""
        return self._open(self._readers)

    @asynccontextmanager
    async def _queued(self, writer: asyncio.Lock) -> AsyncIterator[SqlUnitOfWork]:
        try:
            async with asyncio.timeout(SQLITE_BUSY_TIMEOUT_MS / 1000):
                await writer.acquire()
        except TimeoutError as exc:
            raise ConflictError(
                f"storage is busy, try again: no write turn within {SQLITE_BUSY_TIMEOUT_MS} ms"
            ) from exc
        try:
            async with self._open(self.engine) as uow:
                yield uow
        finally:
            writer.release()

    @asynccontextmanager
    async def _open(self, engine: AsyncEngine) -> AsyncIterator[SqlUnitOfWork]:
        try:
            # One hand-off into SQLAlchemy's sync layer to connect and begin, one to commit
            # (or roll back) and close: ``engine.begin()`` takes four, and closes in a task
            # of its own (see _finish).
            inline = self._writer is not None
            connection, transaction = await greenlet_spawn(_connect_and_begin, engine.sync_engine)
            uow = SqlUnitOfWork(AsyncConnection(engine, connection))
            try:
                yield uow
                await uow._close_db()
            except BaseException:
                await _finish(
                    greenlet_spawn(_end, connection, transaction, False), in_place=inline
                )
                raise
            await _finish(greenlet_spawn(_end, connection, transaction, True), in_place=inline)
        except IntegrityError as exc:
            # The driver's text names the row's values; they go to the log only.
            error_id = new_error_id()
            _log.warning("storage refused a row (error %s): %s", error_id, exc.orig)
            raise ConflictError(
                f"storage refused a duplicate or dangling row (error {error_id})"
            ) from exc
        except DBAPIError as exc:
            # SQLite reports a lock timeout, PostgreSQL a deadlock or serialisation failure;
            # all mean "someone else won, try again".
            if lost_to_another(exc):
                raise ConflictError(f"storage is busy, try again: {exc.orig}") from exc
            # Anything else quotes the SQL and its parameters (a user's text): the log gets
            # them under an error id, the caller a StorageError that says only that id.
            raise internal_error(exc, STORAGE_FAILED, logger=_log, kind=StorageError) from exc

    async def close(self) -> None:
        """Close every pooled connection (call once on shutdown)."""
        await self.engine.dispose()
