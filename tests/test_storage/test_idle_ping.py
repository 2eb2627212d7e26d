"""PostgreSQL's pooled connections are pinged at checkout only after PING_IDLE_S idle
(``pool_pre_ping`` cost three round trips on every checkout, nine a turn): one lost while
idle longer is replaced without an error; one used more recently is taken as it is."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage import database
from adapters.storage.database import PG_MAX_OVERFLOW, PG_POOL_SIZE, PING_IDLE_S, create_engine

pytestmark = pytest.mark.postgres


async def _pooled_backend_killed(url: str) -> tuple[AsyncEngine, int]:
    """An engine whose one pooled connection's server session was terminated."""
    engine = create_engine(url)
    async with engine.connect() as conn:
        pid = (await conn.execute(select(func.pg_backend_pid()))).scalar_one()
    killer = create_engine(url)
    try:
        async with killer.connect() as conn:
            await conn.execute(select(func.pg_terminate_backend(pid)))
    finally:
        await killer.dispose()
    return engine, pid


async def test_a_connection_lost_while_idle_is_replaced_at_checkout(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(database, "PING_IDLE_S", 0.0)  # every pooled connection is "idle"
    engine, pid = await _pooled_backend_killed(pg_url)
    try:
        async with engine.connect() as conn:
            now = (await conn.execute(select(func.pg_backend_pid()))).scalar_one()
        assert now != pid
    finally:
        await engine.dispose()


async def test_a_recently_used_connection_is_not_pinged(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Within PING_IDLE_S no ping is sent: the lost connection fails its statement (what the
    # old pre-ping hid, at three round trips per checkout).
    assert PING_IDLE_S > 0
    monkeypatch.setattr(database, "PING_IDLE_S", 3600.0)
    engine, _pid = await _pooled_backend_killed(pg_url)
    try:
        with pytest.raises(DBAPIError):
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        async with engine.connect() as conn:  # the pool replaced it after the error
            assert (await conn.execute(text("SELECT 1"))).scalar_one() == 1
    finally:
        await engine.dispose()


async def test_the_pool_keeps_its_limits(pg_url: str) -> None:
    engine = create_engine(pg_url)
    try:
        pool: Any = engine.sync_engine.pool
        assert (pool.size(), pool._max_overflow) == (PG_POOL_SIZE, PG_MAX_OVERFLOW)
        held = [await engine.connect() for _ in range(PG_POOL_SIZE + PG_MAX_OVERFLOW)]
        assert pool.checkedout() == PG_POOL_SIZE + PG_MAX_OVERFLOW
        for conn in held:
            await conn.close()
        assert pool.checkedin() == PG_POOL_SIZE  # the overflow ones were closed
    finally:
        await engine.dispose()
