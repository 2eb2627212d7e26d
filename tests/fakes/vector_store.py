"""An in-memory :class:`engine.memory.ports.VectorStore` (what the SQL one does, in a dict)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.memory.ports import UnitVector


class InMemoryVectorStore:
    """Vectors by unit id; ``known_records`` (when given) tells which records still exist."""

    def __init__(self, known_records: Callable[[], set[str]] | None = None) -> None:
        self.vectors: dict[str, UnitVector] = {}
        self.known_records = known_records
        self.saves = 0
        self.loaded: list[list[str]] = []
        """The record ids of each ``load`` call."""

    async def stored(self, record_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        wanted = set(record_ids)
        return {
            key: (v.model, v.text_hash) for key, v in self.vectors.items() if v.record_id in wanted
        }

    async def load(self, record_ids: Sequence[str], model: str) -> list[UnitVector]:
        self.loaded.append(list(record_ids))
        wanted = set(record_ids)
        return [v for v in self.vectors.values() if v.record_id in wanted and v.model == model]

    async def save(self, vectors: Sequence[UnitVector]) -> None:
        self.saves += 1
        for vector in vectors:
            self.vectors[vector.unit_id] = vector

    async def prune(self) -> int:
        if self.known_records is None:
            return 0
        alive = self.known_records()
        gone = [k for k, v in self.vectors.items() if v.record_id not in alive]
        for key in gone:
            del self.vectors[key]
        return len(gone)
