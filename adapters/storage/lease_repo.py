"""Process leases: one row per running process, renewed by its heartbeat (see
:mod:`engine.timeline.leases`)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.storage import convert
from adapters.storage.tables import LEASE
from engine.ports import ProcessLease


class SqlLeases:
    """Process leases."""

    def __init__(self, db: AsyncConnection) -> None:
        self._db = db

    async def renew(self, lease: ProcessLease) -> None:
        values = {
            "host": lease.host,
            "pid": lease.pid,
            "heartbeat_at": lease.heartbeat_at,
            "expires_at": lease.expires_at,
        }
        stmt = update(LEASE).where(LEASE.c.owner == lease.owner).values(**values)
        if (await self._db.execute(stmt)).rowcount == 0:
            await self._db.execute(
                insert(LEASE).values(owner=lease.owner, started_at=lease.heartbeat_at, **values)
            )

    async def of_owners(self, owners: Sequence[str]) -> list[ProcessLease]:
        if not owners:
            return []
        stmt = select(LEASE).where(LEASE.c.owner.in_(sorted(set(owners))))
        return [
            ProcessLease(
                owner=row.owner,
                host=row.host,
                pid=row.pid,
                heartbeat_at=convert.aware(row.heartbeat_at),
                expires_at=convert.aware(row.expires_at),
            )
            for row in await self._db.execute(stmt)
        ]

    async def release(self, owner: str) -> None:
        await self._db.execute(delete(LEASE).where(LEASE.c.owner == owner))
