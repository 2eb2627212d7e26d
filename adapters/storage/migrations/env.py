"""Alembic environment: runs on the connection handed in by adapters.storage.migrate.

The migrate module opens an async engine, and calls Alembic inside ``run_sync`` with the
connection in ``config.attributes["connection"]``; Alembic itself never opens a connection,
so it works the same from the CLI and from inside a running event loop.
"""

from __future__ import annotations

from alembic import context

from adapters.storage.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run migrations through adapters.storage.migrate, not the alembic CLI")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise RuntimeError("offline (SQL script) migrations are not supported")
run_migrations_online()
