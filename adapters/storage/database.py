"""Creating the SQLAlchemy async engine for SQLite (aiosqlite) or PostgreSQL (asyncpg).

An ``sqlite+aiosqlite`` URL keeps SQLAlchemy's aiosqlite dialect, with connections that run
statements on the event loop's thread (:mod:`adapters.storage.sqlite_inline`); they wait for
another process's lock with asyncio sleeps, so SQLite's own busy timeout is 0.

SQLite gets WAL journaling (readers never block the writer), foreign keys on, a busy timeout,
and ``BEGIN IMMEDIATE`` transactions: a unit of work takes the write lock when it starts, so
two writers queue on the busy timeout instead of failing halfway with a stale snapshot. Reading
units of work (marked with :data:`READ_ONLY_OPTION`) start a plain deferred ``BEGIN`` instead.
PostgreSQL runs at READ COMMITTED; compare-and-set updates and a per-branch row lock
serialise what must be serialised. ``schema`` (PostgreSQL only) puts every table in that
schema through ``search_path``; tests use it to isolate themselves.

A pooled PostgreSQL connection is checked before use only when it sat idle for
:data:`PING_IDLE_S` (a server restart or a dropped link is found then, and the pool opens a
fresh one): asyncpg's check is three round trips, and a turn takes two connections plus
the one holding its branch lock (:mod:`adapters.storage.branch_locks`, pinged the same way).

On both backends every bound string and every JSON value passes
:mod:`adapters.storage.text_edge` (NUL and lone surrogates become U+FFFD) before the driver
sees it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from adapters.storage.direct import begin_inline
from adapters.storage.sqlite_inline import InlineSQLiteDBAPI
from adapters.storage.text_edge import storable_json, storable_parameters
from engine.errors import ConflictError

SQLITE_BUSY_TIMEOUT_MS: Final = 30_000
"""How long a SQLite writer waits for the lock before giving up."""

PG_POOL_SIZE: Final = 10
"""PostgreSQL connections a process keeps open for its units of work (a turn takes two,
one at a time)."""
PG_MAX_OVERFLOW: Final = 5
"""Connections opened past the pool under load and closed when given back (at most
PG_POOL_SIZE + PG_MAX_OVERFLOW at once, 15 as before): few, since each new connection
prepares every statement again."""
PING_IDLE_S: Final = 5.0
"""A pooled PostgreSQL connection idle for at least this long is pinged before use; one
used more recently is taken as it is (a connection lost meanwhile fails that one unit of
work, and the pool replaces it)."""

READ_ONLY_OPTION: Final = "tavernbot_read_only"
"""Execution option marking the connections of reading units of work."""


def is_sqlite(url: str) -> bool:
    """Whether ``url`` names a SQLite database."""
    return make_url(url).get_backend_name() == "sqlite"


def create_engine(url: str, *, schema: str | None = None, echo: bool = False) -> AsyncEngine:
    """An async engine for ``url`` set up as described in the module docstring."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        inline = parsed.get_driver_name() == "aiosqlite"
        options: dict[str, Any] = {}
        if inline:
            options["module"] = InlineSQLiteDBAPI(SQLITE_BUSY_TIMEOUT_MS / 1000)
        engine = create_async_engine(url, echo=echo, json_serializer=storable_json, **options)
        _clean_text_at_the_edge(engine)
        # Inline connections wait for a busy database with asyncio sleeps, never in SQLite.
        _setup_sqlite(
            engine, busy_timeout_ms=0 if inline else SQLITE_BUSY_TIMEOUT_MS, inline=inline
        )
        return engine
    connect_args: dict[str, Any] = {}
    if schema is not None:
        connect_args["server_settings"] = {"search_path": schema}
    engine = create_async_engine(
        url,
        echo=echo,
        pool_size=PG_POOL_SIZE,
        max_overflow=PG_MAX_OVERFLOW,
        connect_args=connect_args,
        json_serializer=storable_json,
    )
    _clean_text_at_the_edge(engine)
    ping_when_idle(engine)
    return engine


def ping_when_idle(engine: AsyncEngine) -> None:
    """Ping a pooled connection at checkout only after :data:`PING_IDLE_S` idle (what
    ``pool_pre_ping`` does on every checkout)."""
    pool, dialect = engine.sync_engine.pool, engine.sync_engine.dialect

    @event.listens_for(pool, "checkin")
    def _checked_in(_dbapi_connection: Any, record: Any) -> None:
        record.info["idle_since"] = time.monotonic()

    @event.listens_for(pool, "checkout")
    def _checked_out(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.pop("idle_since", None)
        if since is None or time.monotonic() - since < PING_IDLE_S:
            return
        try:
            alive = dialect.do_ping(dbapi_connection)
        except Exception as exc:
            # The pool retries the checkout with a new connection.
            raise DisconnectionError("a pooled connection was lost while idle") from exc
        if not alive:
            raise DisconnectionError("a pooled connection was lost while idle")


def _clean_text_at_the_edge(engine: AsyncEngine) -> None:
    """Make every bound string storable on this engine (see :mod:`.text_edge`)."""

    @event.listens_for(engine.sync_engine, "before_cursor_execute", retval=True)
    def _storable(
        _conn: Any, _cursor: Any, statement: str, parameters: Any, _context: Any, _many: bool
    ) -> tuple[str, Any]:
        return statement, storable_parameters(parameters)


def _setup_sqlite(engine: AsyncEngine, *, busy_timeout_ms: int, inline: bool) -> None:
    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from the driver so BEGIN IMMEDIATE is ours to emit.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        # A reading unit of work starts a deferred transaction: a WAL snapshot, no lock.
        read_only = connection.get_execution_options().get(READ_ONLY_OPTION, False)
        statement = "BEGIN" if read_only else "BEGIN IMMEDIATE"
        if inline:
            # Below SQLAlchemy's execution layer, like the turn's statements.
            begin_inline(connection, statement)
        else:
            connection.exec_driver_sql(statement)


LOCK_WORDS: Final = ("database is locked", "deadlock detected", "could not serialize")
"""What the drivers say when another transaction won: SQLite's lock timeout, PostgreSQL's
deadlock or serialisation failure. Each means "try again", not a fault."""


def lost_to_another(exc: DBAPIError) -> bool:
    """Whether ``exc`` says another transaction won (see :data:`LOCK_WORDS`)."""
    return any(word in str(exc.orig).lower() for word in LOCK_WORDS)


@asynccontextmanager
async def begin_or_busy(engine: AsyncEngine, what: str) -> AsyncIterator[AsyncConnection]:
    """A transaction on ``engine``; losing to another one is a ConflictError naming ``what``
    ("memory storage is busy, try again: ...")."""
    try:
        async with engine.begin() as conn:
            yield conn
    except OperationalError as exc:
        if lost_to_another(exc):
            raise ConflictError(f"{what} is busy, try again: {exc.orig}") from exc
        raise
