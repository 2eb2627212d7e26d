"""Storage: the unit-of-work port over SQLAlchemy 2 async, with Alembic migrations.

SQLite by default (an ``sqlite+aiosqlite`` URL; statements run on the event loop's thread, see
:mod:`adapters.storage.sqlite_inline`), PostgreSQL through asyncpg with the same code::

    storage = await open_storage("sqlite+aiosqlite:///./data/tavernbot.db")  # migrates to head
    async with storage.unit_of_work() as uow:
        ...
    await storage.close()

``upgrade(url)`` migrates from synchronous code (``tavernbot db upgrade``);
``await upgrade_async(url)`` from inside the event loop.
"""

from __future__ import annotations

from adapters.storage.database import create_engine
from adapters.storage.migrate import upgrade, upgrade_async, upgrade_engine
from adapters.storage.uow import SqlStorage, SqlUnitOfWork

__all__ = [
    "SqlStorage",
    "SqlUnitOfWork",
    "create_engine",
    "open_storage",
    "upgrade",
    "upgrade_async",
    "upgrade_engine",
]


async def open_storage(
    url: str, *, migrate: bool = True, schema: str | None = None, echo: bool = False
) -> SqlStorage:
    """A :class:`SqlStorage` for ``url``, migrated to head first unless ``migrate`` is False."""
    engine = create_engine(url, schema=schema, echo=echo)
    if migrate:
        await upgrade_engine(engine)
    return SqlStorage(engine)
