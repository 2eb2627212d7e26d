"""A canary for the inline SQLite shim (adapters/storage/sqlite_inline.py).

The shim subclasses SQLAlchemy's private aiosqlite adapter classes, which may change in any
release. These tests fail loudly, saying what to check, when the installed SQLAlchemy is not
one the shim was checked against, when ``pyproject.toml`` pins another range, or when a
private name the shim relies on is gone or changed shape.
"""

from __future__ import annotations

import inspect
import re
import sqlite3
from pathlib import Path

import sqlalchemy
from sqlalchemy.dialects.sqlite import aiosqlite as sa_aiosqlite
from sqlalchemy.util import greenlet_spawn

from adapters.storage.sqlite_inline import (
    TESTED_SQLALCHEMY,
    InlineConnection,
    InlineSQLiteDBAPI,
)

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
WHAT_TO_CHECK = (
    "check adapters/storage/sqlite_inline.py against sqlalchemy/dialects/sqlite/aiosqlite.py "
    "and sqlalchemy/connectors/asyncio.py of this version (the adapter classes it subclasses, "
    "their __init__ arguments, the _connection attribute, isolation_level, "
    "_terminate_force_close calling stop()), run tests/test_storage, then widen "
    "TESTED_SQLALCHEMY and the SQLAlchemy pin in pyproject.toml together"
)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def _shown(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


def test_installed_sqlalchemy_is_one_the_shim_was_checked_against() -> None:
    low, high = TESTED_SQLALCHEMY
    installed = _version(sqlalchemy.__version__)
    assert low <= installed < high, (
        f"SQLAlchemy {sqlalchemy.__version__} is outside the versions the inline SQLite shim "
        f"was checked against (>={_shown(low)},<{_shown(high)}): {WHAT_TO_CHECK}"
    )


def test_pyproject_pins_the_tested_range() -> None:
    low, high = TESTED_SQLALCHEMY
    (line,) = re.findall(r'"SQLAlchemy\[asyncio\][^"]*"', PYPROJECT.read_text(encoding="utf-8"))
    expected = f'"SQLAlchemy[asyncio]>={_shown(low)},<{_shown(high)}"'
    assert line == expected, (
        f"pyproject.toml pins {line}, but the inline SQLite shim is checked against "
        f"{expected}: {WHAT_TO_CHECK}"
    )


def test_private_names_the_shim_relies_on_still_exist() -> None:
    connection_cls = sa_aiosqlite.AsyncAdapt_aiosqlite_connection
    dbapi_cls = sa_aiosqlite.AsyncAdapt_aiosqlite_dbapi
    missing = [
        name
        for owner, name in [
            (connection_cls, "isolation_level"),
            (connection_cls, "_terminate_force_close"),
            (connection_cls, "_handle_exception"),
            (dbapi_cls, "connect"),
        ]
        if not hasattr(owner, name)
    ]
    assert not missing, f"SQLAlchemy's aiosqlite adapter lost {missing}: {WHAT_TO_CHECK}"
    assert isinstance(inspect.getattr_static(connection_cls, "isolation_level"), property), (
        f"isolation_level is no longer a property of the adapter: {WHAT_TO_CHECK}"
    )
    shapes = {
        "AsyncAdapt_aiosqlite_dbapi(aiosqlite, sqlite)": list(
            inspect.signature(dbapi_cls.__init__).parameters
        )
        == ["self", "aiosqlite", "sqlite"],
        "AsyncAdapt_aiosqlite_connection(dbapi, connection)": list(
            inspect.signature(connection_cls.__init__).parameters
        )
        == ["self", "dbapi", "connection"],
    }
    changed = [name for name, same in shapes.items() if not same]
    assert not changed, f"SQLAlchemy changed the constructors {changed}: {WHAT_TO_CHECK}"


async def test_the_adapter_wraps_the_inline_connection_as_the_shim_expects() -> None:
    dbapi = InlineSQLiteDBAPI(busy_timeout=0.1)
    # The dialect turns terminate() off unless the aiosqlite module it is given has stop().
    assert dbapi.has_stop, f"the adapter's has_stop check changed: {WHAT_TO_CHECK}"
    assert issubclass(dbapi.OperationalError, sqlite3.OperationalError)
    stopped: list[bool] = []

    def use_the_adapter() -> None:
        # The adapter's methods wait on the driver's coroutines, as inside an engine.
        adapted = dbapi.connect(":memory:")
        driver = adapted._connection
        assert isinstance(driver, InlineConnection), (
            f"the adapter no longer keeps its driver connection in _connection: {WHAT_TO_CHECK}"
        )
        adapted.isolation_level = None
        assert adapted.isolation_level is None and driver.raw.isolation_level is None
        cursor = adapted.cursor()
        cursor.execute("SELECT 1")
        assert cursor.fetchall() == [(1,)]
        cursor.close()
        adapted.commit()
        # terminate() ends in _terminate_force_close, which must call the driver's stop().
        adapted.terminate()
        stopped.append(driver._connection is None)

    await greenlet_spawn(use_the_adapter)
    assert stopped == [True], f"terminate() no longer stops the driver: {WHAT_TO_CHECK}"


def test_private_asyncpg_names_the_direct_statements_rely_on_still_exist() -> None:
    # adapters/storage/direct.py begins the adapter's transaction itself before running a
    # statement on the asyncpg connection, so the adapter's commit or rollback ends it.
    from sqlalchemy.dialects.postgresql import asyncpg as sa_asyncpg

    connection_cls = sa_asyncpg.AsyncAdapt_asyncpg_connection
    slots = set(getattr(connection_cls, "__slots__", ()))
    assert "_transaction" in slots, (
        "SQLAlchemy's asyncpg adapter no longer keeps _transaction: check "
        "adapters/storage/direct.py (_on_postgres) against sqlalchemy/dialects/postgresql/"
        "asyncpg.py of this version"
    )
    start = getattr(connection_cls, "_start_transaction", None)
    assert start is not None and inspect.iscoroutinefunction(start), (
        "SQLAlchemy's asyncpg adapter changed _start_transaction: check "
        "adapters/storage/direct.py (_on_postgres)"
    )
