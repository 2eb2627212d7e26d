"""The repository of a realm's assets (cards, presets, world books, regex sets, personas...),
one row per ``(realm, kind, name)``, in the unit of work's one connection."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import and_, delete, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.storage import convert
from adapters.storage.direct import DirectRunner
from adapters.storage.models import utcnow
from adapters.storage.tables import ASSET
from adapters.storage.turn_statements import ASSET_BY_NAME, assets_named
from engine.timeline.values import Asset, AssetKind


class SqlAssets:
    """Assets."""

    def __init__(self, db: AsyncConnection, direct: DirectRunner | None = None) -> None:
        self._db = db
        self._run = direct if direct is not None else DirectRunner(db)

    async def put(
        self, *, realm_id: int, kind: AssetKind, name: str, data: Mapping[str, Any]
    ) -> Asset:
        now = utcnow()
        where = and_(ASSET.c.realm_id == realm_id, ASSET.c.kind == kind, ASSET.c.name == name)
        stmt = update(ASSET).where(where).values(data=dict(data), updated_at=now)
        stmt = stmt.returning(*ASSET.c)
        row = (await self._db.execute(stmt)).first()
        if row is None:
            insert_stmt = (
                insert(ASSET)
                .values(
                    realm_id=realm_id,
                    kind=kind,
                    name=name,
                    data=dict(data),
                    created_at=now,
                    updated_at=now,
                )
                .returning(*ASSET.c)
            )
            row = (await self._db.execute(insert_stmt)).one()
        return convert.asset(row)

    async def get(self, realm_id: int, kind: AssetKind, name: str) -> Asset | None:
        params = {"realm_id": realm_id, "kind": kind, "name": name}
        row = (await self._run.execute(ASSET_BY_NAME, params)).first()
        return None if row is None else convert.asset(row)

    async def get_many(
        self, realm_id: int, wanted: Sequence[tuple[AssetKind, str]]
    ) -> builtins.list[Asset]:
        if not wanted:
            return []
        pairs = sorted(set(wanted))
        params: dict[str, Any] = {"realm_id": realm_id}
        for n, (kind, name) in enumerate(pairs):
            params.update({f"k{n}": kind, f"n{n}": name})
        stmt = assets_named(len(pairs))
        return [convert.asset(row) for row in await self._run.execute(stmt, params)]

    async def list(self, realm_id: int, kind: AssetKind | None = None) -> builtins.list[Asset]:
        stmt = select(ASSET).where(ASSET.c.realm_id == realm_id)
        if kind is not None:
            stmt = stmt.where(ASSET.c.kind == kind)
        stmt = stmt.order_by(ASSET.c.kind, ASSET.c.name)
        return [convert.asset(row) for row in await self._db.execute(stmt)]

    async def delete(self, realm_id: int, kind: AssetKind, name: str) -> bool:
        stmt = delete(ASSET).where(
            ASSET.c.realm_id == realm_id, ASSET.c.kind == kind, ASSET.c.name == name
        )
        result = await self._db.execute(stmt)
        return bool(result.rowcount)
