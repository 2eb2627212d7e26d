"""The variable log, the materialised values and the branch snapshots."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import delete, insert, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.storage import convert
from adapters.storage.direct import DirectRunner
from adapters.storage.models import (
    utcnow,
)
from adapters.storage.tables import LOG, SNAPSHOT, VALUE
from adapters.storage.turn_statements import values_of_owners
from engine.variables.fold import DELETED
from engine.variables.values import LogEntry, Mutation, NewLogEntry, Scope


class SqlVariables:
    """Variables inside one unit of work."""

    def __init__(self, db: AsyncConnection, direct: DirectRunner | None = None) -> None:
        self._db = db
        self._run = direct if direct is not None else DirectRunner(db)

    async def append(self, entries: Sequence[NewLogEntry]) -> None:
        if not entries:
            return
        now = utcnow()
        rows = [
            {
                "source": e.source,
                "scope": e.mutation.scope,
                "key": e.mutation.key,
                "op": e.mutation.op,
                "value": None if e.mutation.op == "delete" else e.mutation.value,
                "realm_id": e.realm_id,
                "session_id": e.session_id,
                "branch_id": e.branch_id,
                "seq": e.seq,
                "floor_id": e.floor_id,
                "page_id": e.page_id,
                "created_at": now,
            }
            for e in entries
        ]
        # executemany keeps the order of the rows, and with it the ids.
        await self._db.execute(insert(LOG), rows)

    async def values(self, scope: Scope, owner_id: int) -> dict[str, Any]:
        stmt = select(VALUE.c.key, VALUE.c.value).where(
            VALUE.c.scope == scope, VALUE.c.owner_id == owner_id
        )
        return {row.key: row.value for row in await self._db.execute(stmt)}

    async def values_of(
        self, owners: Sequence[tuple[Scope, int]]
    ) -> dict[tuple[Scope, int], dict[str, Any]]:
        result: dict[tuple[Scope, int], dict[str, Any]] = {owner: {} for owner in owners}
        if not owners:
            return result
        params: dict[str, Any] = {}
        for n, (scope, owner_id) in enumerate(owners):
            params.update({f"s{n}": scope, f"o{n}": owner_id})
        for row in await self._run.execute(values_of_owners(len(owners)), params):
            result[(row.scope, row.owner_id)][row.key] = row.value
        return result

    async def change(self, scope: Scope, owner_id: int, delta: Mapping[str, Any]) -> None:
        deleted = [key for key, value in delta.items() if value is DELETED]
        if deleted:
            await self._db.execute(
                delete(VALUE).where(
                    VALUE.c.scope == scope,
                    VALUE.c.owner_id == owner_id,
                    VALUE.c.key.in_(deleted),
                )
            )
        rows = [
            {"scope": scope, "owner_id": owner_id, "key": key, "value": value}
            for key, value in delta.items()
            if value is not DELETED
        ]
        if rows:
            await self._db.execute(self._upsert(), rows)

    def _upsert(self) -> Any:
        """``INSERT ... ON CONFLICT (scope, owner_id, key) DO UPDATE`` for this dialect: one
        statement per change instead of a delete and an insert."""
        dialect = self._db.dialect.name
        make = pg_insert if dialect == "postgresql" else sqlite_insert
        stmt = make(VALUE)
        return stmt.on_conflict_do_update(
            index_elements=[VALUE.c.scope, VALUE.c.owner_id, VALUE.c.key],
            set_={"value": stmt.excluded.value},
        )

    async def replace(self, scope: Scope, owner_id: int, values: Mapping[str, Any]) -> None:
        await self._db.execute(
            delete(VALUE).where(VALUE.c.scope == scope, VALUE.c.owner_id == owner_id)
        )
        rows = [
            {"scope": scope, "owner_id": owner_id, "key": key, "value": value}
            for key, value in values.items()
        ]
        if rows:
            await self._db.execute(insert(VALUE), rows)

    async def page_log(self, page_ids: Sequence[int], scope: Scope) -> dict[int, list[Mutation]]:
        result: dict[int, list[Mutation]] = defaultdict(list)
        if not page_ids:
            return result
        stmt = (
            select(LOG.c.page_id, LOG.c.op, LOG.c.scope, LOG.c.key, LOG.c.value)
            .where(LOG.c.page_id.in_(list(page_ids)), LOG.c.scope == scope)
            .where(LOG.c.source == "page")
            .order_by(LOG.c.id)
        )
        for row in await self._db.execute(stmt):
            result[row.page_id].append(convert.mutation(row))
        return result

    async def explicit(
        self, branch_id: int, first: int, last: int | None, scope: Scope
    ) -> list[LogEntry]:
        stmt = select(LOG).where(
            LOG.c.branch_id == branch_id,
            LOG.c.scope == scope,
            LOG.c.source == "explicit",
            LOG.c.seq >= first,
        )
        if last is not None:
            stmt = stmt.where(LOG.c.seq <= last)
        stmt = stmt.order_by(LOG.c.id)
        return [convert.log_entry(row) for row in await self._db.execute(stmt)]

    async def history(self, key: str, *, session_id: int, realm_id: int) -> list[LogEntry]:
        stmt = (
            select(LOG)
            # A session lives in one realm, so (key, realm) narrows both kinds of entry.
            .where(LOG.c.key == key, LOG.c.realm_id == realm_id)
            .where(or_(LOG.c.session_id == session_id, LOG.c.scope == "global"))
            .order_by(LOG.c.id)
        )
        return [convert.log_entry(row) for row in await self._db.execute(stmt)]

    async def save_snapshot(self, page_id: int, values: Mapping[str, Any]) -> None:
        await self._db.execute(insert(SNAPSHOT).values(page_id=page_id, data=dict(values)))

    async def snapshot(self, page_id: int) -> dict[str, Any] | None:
        stmt = select(SNAPSHOT.c.data).where(SNAPSHOT.c.page_id == page_id)
        row = (await self._db.execute(stmt)).first()
        return None if row is None else dict(row.data)
