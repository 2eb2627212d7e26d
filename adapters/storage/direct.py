"""The turn's prebuilt statements run on the driver connection, below SQLAlchemy's execution
layer.

A turn runs about twenty statements; through ``AsyncConnection.execute`` each one pays for a
greenlet hand-off, the cache-key walk, the execution context and the result proxy, which on
SQLite cost several times the statement itself. Here a prebuilt statement
(:mod:`adapters.storage.turn_statements`) is compiled once per dialect into its SQL text, the
order of its parameters and the type processors of its parameters and columns
(:func:`plan_of`), and then runs straight on the driver under the unit of work's transaction:
:mod:`sqlite3` through :class:`~adapters.storage.sqlite_inline.InlineConnection` (busy retries
included), or asyncpg (after the SQLAlchemy adapter began its transaction).

What SQLAlchemy did on the way stays: every ``before_cursor_execute`` listener of the engine
runs (the storable-text edge of :mod:`adapters.storage.database`, statement counters), Python
column defaults are filled in, and a driver error becomes SQLAlchemy's ``IntegrityError``,
``OperationalError`` or ``DBAPIError`` with the driver's error as ``orig``, which the unit of
work turns into ``ConflictError`` or ``StorageError`` as before.
"""

from __future__ import annotations

import collections
import functools
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import asyncpg  # type: ignore[import-untyped]
from sqlalchemy import Insert
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.dml import UpdateBase
from sqlalchemy.sql.selectable import Select
from sqlalchemy.util import await_

from adapters.storage.sqlite_inline import InlineConnection

PLAN_CACHE_SIZE: Final = 256
"""Compiled plans kept (one per statement, dialect and set of inserted columns); a plan past
them is compiled again when next used."""

Params = Mapping[str, Any]
_NAMED_TUPLE: Any = collections.namedtuple  # a row class per statement, named at run time
_Processor = Callable[[Any], Any] | None


@dataclass(frozen=True, slots=True)
class Plan:
    """One statement compiled for one dialect: what :class:`DirectRunner` runs."""

    sql: str
    names: tuple[str, ...]
    """Parameter names in positional order."""
    binds: tuple[_Processor, ...]
    """The bind processor of each position (None: the value goes as it is)."""
    defaults: tuple[tuple[str, Callable[[], Any]], ...]
    """Values of parameters a caller need not pass (a LIMIT, a literal, a column default)."""
    row: Any
    """The named tuple class of a result row, None when the statement returns no rows."""
    results: tuple[_Processor, ...]
    """The result processor of each column."""


def _fixed(value: Any) -> Callable[[], Any]:
    return lambda: value


def _column_default(column: Any) -> Callable[[], Any]:
    default = column.default
    if default is None:
        return _fixed(None)
    if default.is_scalar:
        return _fixed(default.arg)
    if default.is_callable:
        # SQLAlchemy wraps a default that takes no argument to take an execution context;
        # the turn's tables only use such defaults (utcnow, dict).
        make = default.arg
        return lambda: make(None)
    raise ValueError(f"column {column.key!r} has a default that only SQL can compute")


@functools.lru_cache(maxsize=PLAN_CACHE_SIZE)
def plan_of(stmt: Select[Any] | UpdateBase, dialect: Dialect, keys: tuple[str, ...]) -> Plan:
    """``stmt`` compiled for ``dialect``; ``keys``: the inserted columns of an INSERT (its
    other columns take their defaults), ignored for any other statement."""
    insert = isinstance(stmt, Insert)
    compiled = stmt.compile(dialect=dialect, column_keys=list(keys) if insert else None)
    assert isinstance(compiled, SQLCompiler)
    names = tuple(compiled.positiontup or ())
    if "POSTCOMPILE" in compiled.string or compiled.escaped_bind_names:
        raise ValueError("a direct statement needs plain positional parameters")
    if compiled.update_prefetch:
        raise ValueError("a direct statement may not rely on update defaults")
    binds = tuple(
        compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect) for name in names
    )
    prefetch = {column.key: column for column in compiled.insert_prefetch}
    defaults: list[tuple[str, Callable[[], Any]]] = []
    for name in dict.fromkeys(names):
        if name in prefetch:
            defaults.append((name, _column_default(prefetch[name])))
        elif not (insert and name in keys):
            bind = compiled.binds[name]
            if bind.callable is not None:
                defaults.append((name, bind.callable))
            elif bind.value is not None or not bind.required:
                defaults.append((name, _fixed(bind.value)))
    columns = list(stmt.exported_columns)
    row: Any = None
    if columns:
        # An unnamed column (a bare max()) gets a positional name; the rest keep theirs.
        row = _NAMED_TUPLE("Row", [str(column.key) for column in columns], rename=True)
    results = tuple(c.type.dialect_impl(dialect).result_processor(dialect, None) for c in columns)
    return Plan(compiled.string, names, binds, tuple(defaults), row, results)


def before_execute(connection: Connection, sql: str, args: Any, many: bool) -> Any:
    """Run the engine's ``before_cursor_execute`` listeners on ``sql`` as SQLAlchemy would
    (no cursor or execution context); the parameters they leave."""
    for listener in connection.dispatch.before_cursor_execute:
        sql, args = listener(connection, None, sql, args, None, many)
    return args


def begin_inline(connection: Connection, sql: str) -> None:
    """Run SQLite's ``BEGIN`` statement ``sql`` for ``connection`` (SQLAlchemy's sync
    layer, inside its greenlet) straight on the inline driver, busy retries included."""
    before_execute(connection, sql, (), False)
    inline: InlineConnection = connection.connection.dbapi_connection._connection  # type: ignore[union-attr]
    try:
        await_(inline.run(inline.raw.execute, sql))
    except sqlite3.Error as exc:
        raise _wrapped(exc, sql, ()) from exc


class DirectResult:
    """The rows of one direct statement (named tuples) and its row count."""

    __slots__ = ("rowcount", "rows")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self.rows = rows
        self.rowcount = rowcount

    def __iter__(self) -> Iterator[Any]:
        return iter(self.rows)

    def first(self) -> Any:
        """The first row, or None."""
        return self.rows[0] if self.rows else None

    def one(self) -> Any:
        """The only row (a statement that must return exactly one)."""
        if len(self.rows) != 1:
            raise ValueError(f"expected one row, got {len(self.rows)}")
        return self.rows[0]

    def scalar(self) -> Any:
        """The first column of the first row, or None."""
        return self.rows[0][0] if self.rows else None


def _wrapped(exc: BaseException, sql: str, args: Any) -> DBAPIError:
    """The driver's ``exc`` as the SQLAlchemy error the unit of work sorts."""
    if isinstance(exc, sqlite3.IntegrityError | asyncpg.IntegrityConstraintViolationError):
        return IntegrityError(sql, args, exc)
    if isinstance(exc, sqlite3.OperationalError):
        return OperationalError(sql, args, exc)
    return DBAPIError(sql, args, exc)


_NONE: Final[Params] = {}
"""No parameters (never changed)."""
_DRIVER_ERRORS: Final = (sqlite3.Error, asyncpg.PostgresError, asyncpg.InterfaceError, OSError)


class DirectRunner:
    """Runs prebuilt statements on the driver connection of one unit of work's transaction."""

    def __init__(self, connection: AsyncConnection) -> None:
        self._connection = connection
        self._dialect = connection.dialect
        self._sqlite = self._dialect.name == "sqlite"

    def _args(self, plan: Plan, params: Params) -> tuple[Any, ...]:
        if plan.defaults:
            params = dict(params)
            for name, make in plan.defaults:
                if name not in params:
                    params[name] = make()
        return tuple(
            value if bind is None else bind(value)
            for bind, value in zip(plan.binds, [params[name] for name in plan.names], strict=True)
        )

    def _edge(self, sql: str, args: Any, many: bool) -> Any:
        sync = self._connection.sync_connection
        assert sync is not None
        return before_execute(sync, sql, args, many)

    async def execute(
        self, stmt: Select[Any] | UpdateBase, params: Params | Sequence[Params] = _NONE
    ) -> DirectResult:
        """Run ``stmt`` with ``params`` (a list of parameter sets: once per set, no rows)."""
        many = isinstance(params, list | tuple)
        sets: Sequence[Params] = params if many else [params]  # type: ignore[assignment,list-item]
        if not sets:
            return DirectResult([], 0)
        keys = tuple(sets[0]) if isinstance(stmt, Insert) else ()
        plan = plan_of(stmt, self._dialect, keys)
        args: Any = [self._args(plan, p) for p in sets] if many else self._args(plan, sets[0])
        args = self._edge(plan.sql, args, many)
        try:
            if self._sqlite:
                raw, count = await self._on_sqlite(plan, args, many)
            else:
                raw, count = await self._on_postgres(plan, args, many)
        except _DRIVER_ERRORS as exc:
            raise _wrapped(exc, plan.sql, args) from exc
        if plan.row is None:
            return DirectResult([], count)
        make, results = plan.row._make, plan.results
        rows = [
            make([v if p is None else p(v) for p, v in zip(results, r, strict=True)]) for r in raw
        ]
        return DirectResult(rows, count)

    def _driver(self) -> Any:
        sync = self._connection.sync_connection
        assert sync is not None
        return sync.connection.dbapi_connection

    async def _on_sqlite(self, plan: Plan, args: Any, many: bool) -> tuple[list[Any], int]:
        # The transaction began with the unit of work (BEGIN or BEGIN IMMEDIATE).
        inline: InlineConnection = self._driver()._connection
        cursor = inline.raw.cursor()
        try:
            await inline.run(cursor.executemany if many else cursor.execute, plan.sql, args)
            rows = cursor.fetchall() if plan.row is not None else []
            return rows, cursor.rowcount
        finally:
            cursor.close()

    async def _on_postgres(self, plan: Plan, args: Any, many: bool) -> tuple[list[Any], int]:
        adapted = self._driver()
        if adapted._transaction is None:
            # SQLAlchemy's asyncpg adapter begins its transaction at the first statement;
            # begin it the same way, so its commit or rollback ends what ran here.
            await adapted._start_transaction()
        driver: asyncpg.Connection = adapted._connection
        if many:
            await driver.executemany(plan.sql, args)
            return [], len(args)
        if plan.row is not None:
            rows = await driver.fetch(plan.sql, *args)
            return rows, len(rows)
        status = await driver.execute(plan.sql, *args)
        last = status.rsplit(" ", 1)[-1]
        return [], int(last) if last.isdigit() else -1
