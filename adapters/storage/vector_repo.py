"""Unit vectors on SQL: :class:`engine.memory.ports.VectorStore` for SQLAlchemy.

Like the memory repository, every call is one short transaction of its own on the storage's
engine, never inside a turn's unit of work. Saving replaces a unit's vector (whatever model
made the old one) by deleting and inserting in the same transaction, which works the same on
SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime

from sqlalchemy import and_, delete, insert, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adapters.storage.database import begin_or_busy
from adapters.storage.memory_repo import IN_CHUNK
from adapters.storage.tables import RECORD, UNIT_VECTOR
from engine.memory.ports import UnitVector

UNITS_PER_DELETE = 200
"""(record, unit) pairs per ``DELETE`` when replacing vectors (each pair is two parameters)."""


def _chunks(ids: Sequence[str]) -> list[list[str]]:
    unique = list(dict.fromkeys(ids))
    return [unique[i : i + IN_CHUNK] for i in range(0, len(unique), IN_CHUNK)]


class SqlVectorStore:
    """:class:`engine.memory.ports.VectorStore` on one SQLAlchemy async engine."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    def _begin(self) -> AbstractAsyncContextManager[AsyncConnection]:
        return begin_or_busy(self._engine, "vector storage")

    async def stored(self, record_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """Unit id -> (model, text hash) of the stored vectors of these records."""
        found: dict[str, tuple[str, str]] = {}
        columns = (
            UNIT_VECTOR.c.record_id,
            UNIT_VECTOR.c.unit_index,
            UNIT_VECTOR.c.model,
            UNIT_VECTOR.c.text_hash,
        )
        async with self._begin() as conn:
            for chunk in _chunks(record_ids):
                rows = await conn.execute(
                    select(*columns).where(UNIT_VECTOR.c.record_id.in_(chunk))
                )
                for row in rows:
                    found[f"{row.record_id}#{row.unit_index}"] = (row.model, row.text_hash)
        return found

    async def load(self, record_ids: Sequence[str], model: str) -> list[UnitVector]:
        """The stored vectors of these records made by ``model``."""
        vectors: list[UnitVector] = []
        async with self._begin() as conn:
            for chunk in _chunks(record_ids):
                rows = await conn.execute(
                    select(UNIT_VECTOR).where(
                        UNIT_VECTOR.c.record_id.in_(chunk), UNIT_VECTOR.c.model == model
                    )
                )
                vectors.extend(
                    UnitVector(
                        record_id=row.record_id,
                        unit_index=row.unit_index,
                        model=row.model,
                        text_hash=row.text_hash,
                        vector=tuple(float(x) for x in row.vector),
                    )
                    for row in rows
                )
        return vectors

    async def save(self, vectors: Sequence[UnitVector]) -> None:
        """Insert or replace (per unit) these vectors in one transaction."""
        if not vectors:
            return
        latest = {v.unit_id: v for v in vectors}  # a unit given twice: the last one wins
        items = list(latest.values())
        now = datetime.now(UTC)
        async with self._begin() as conn:
            for start in range(0, len(items), UNITS_PER_DELETE):
                part = items[start : start + UNITS_PER_DELETE]
                await conn.execute(
                    delete(UNIT_VECTOR).where(
                        or_(
                            *(
                                and_(
                                    UNIT_VECTOR.c.record_id == v.record_id,
                                    UNIT_VECTOR.c.unit_index == v.unit_index,
                                )
                                for v in part
                            )
                        )
                    )
                )
            await conn.execute(
                insert(UNIT_VECTOR),
                [
                    {
                        "record_id": v.record_id,
                        "unit_index": v.unit_index,
                        "model": v.model,
                        "dims": v.dims,
                        "text_hash": v.text_hash,
                        "vector": list(v.vector),
                        "created_at": now,
                    }
                    for v in items
                ],
            )

    async def prune(self) -> int:
        """Delete vectors whose record no longer exists (it was purged); returns how many."""
        async with self._begin() as conn:
            result = await conn.execute(
                delete(UNIT_VECTOR).where(UNIT_VECTOR.c.record_id.not_in(select(RECORD.c.id)))
            )
        return int(result.rowcount or 0)
