"""A PostgreSQL database of its own for tests that run several real processes on it.

Processes connect by URL only (no per-test ``search_path``), so each such test gets a fresh
database on the test server, created here and dropped (its connections ended) afterwards."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine


@asynccontextmanager
async def fresh_database(pg_url: str) -> AsyncIterator[str]:
    """The URL of a new, empty database on the server of ``pg_url``, dropped on exit."""
    name = f"tb_{uuid.uuid4().hex[:16]}"
    admin = create_async_engine(pg_url, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            await conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield make_url(pg_url).set(database=name).render_as_string(hide_password=False)
        finally:
            async with admin.connect() as conn:
                await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        await admin.dispose()
