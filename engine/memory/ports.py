"""What the memory engine needs from storage; ``adapters.storage`` implements it with SQLAlchemy.

Implementations keep records, relations and job states. Planning happens in the engine from
plain values, so the repository stays a thin store: it never decides visibility, ranking or
lifecycle on its own, it applies :class:`~engine.memory.plan.MutationPlan` atomically and swaps
job states with compare-and-set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from engine.memory.jobs import JobState, JobType
from engine.memory.plan import MutationPlan
from engine.memory.records import Lifecycle, MemoryKind, MemoryRecord, MemoryRelation, MemoryScope


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryQuery:
    """A filter over stored records; ``None`` fields do not filter.

    ``scopes`` restricts to exact (scope, scope id) pairs. ``branch_ids`` keeps records whose
    ``origin_branch`` is one of them (plus realm-wide records, whose origin is irrelevant):
    that is how a viewer's lineage is loaded before :func:`engine.memory.lineage.visible_records`
    applies the floor limits.
    """

    realm_id: str
    session_id: str | None = None
    kinds: frozenset[MemoryKind] | None = None
    lifecycles: frozenset[Lifecycle] | None = frozenset({Lifecycle.ACTIVE})
    scopes: frozenset[tuple[MemoryScope, str]] | None = None
    branch_ids: frozenset[str] | None = None
    key: str | None = None
    limit: int | None = None


class MemoryRepository(Protocol):
    """Storage for memory records, their relations and the memory jobs' states."""

    async def add_records(self, records: Sequence[MemoryRecord]) -> None:
        """Insert new records (ids are new; a duplicate id raises ``ConflictError``)."""
        ...

    async def get_records(self, ids: Sequence[str]) -> list[MemoryRecord]:
        """The records with these ids that exist, in the order asked."""
        ...

    async def query_records(self, query: MemoryQuery) -> list[MemoryRecord]:
        """Records matching ``query``, oldest ``created_floor`` first, then by id."""
        ...

    async def relations_for(self, record_ids: Sequence[str]) -> list[MemoryRelation]:
        """Every relation whose source or target is one of ``record_ids``."""
        ...

    async def apply_plan(self, plan: MutationPlan) -> None:
        """Apply a plan in one transaction: insert, change lifecycles, relate, purge.

        A change whose record is not in its ``expected`` lifecycle (or is missing) aborts the
        whole plan with :class:`engine.memory.errors.MemoryConflictError`.
        """
        ...

    async def mark_used(self, ids: Sequence[str], *, floor_no: int, at: datetime) -> None:
        """Record that these records were injected at ``floor_no`` (feeds decay)."""
        ...

    async def load_job(self, job_type: JobType, scope_key: str) -> JobState | None:
        """The job's state, or None if it never ran."""
        ...

    async def save_job(self, state: JobState, *, expected_revision: int | None) -> bool:
        """Compare-and-set: store ``state`` only if the stored revision is ``expected_revision``
        (None: only if no state exists yet). Returns whether it was stored."""
        ...

    async def list_jobs(self, job_type: JobType | None = None) -> list[JobState]:
        """All job states (of one type), for recovery on start."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitVector:
    """The embedding of one unit (:mod:`engine.memory.units`) under one model.

    ``text_hash`` is the hash of the unit's text when it was embedded
    (:func:`engine.memory.embedding.unit_hash`): a vector whose text changed is stale.
    """

    record_id: str
    unit_index: int
    model: str
    text_hash: str
    vector: tuple[float, ...]

    @property
    def unit_id(self) -> str:
        """``record-id#index``, as :attr:`engine.memory.units.MemoryUnit.id`."""
        return f"{self.record_id}#{self.unit_index}"

    @property
    def dims(self) -> int:
        """The vector's dimension."""
        return len(self.vector)


class Embedder(Protocol):
    """An embeddings endpoint: texts in, one vector per text out (same order)."""

    @property
    def model(self) -> str:
        """The embedding model's name (stored with every vector)."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """One vector per text; raises :class:`engine.errors.GenerationError` on failure."""
        ...


class VectorStore(Protocol):
    """Storage for unit vectors: one vector per unit, of whatever model embedded it last."""

    async def stored(self, record_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
        """Unit id -> (model, text hash) of the stored vectors of these records."""
        ...

    async def load(self, record_ids: Sequence[str], model: str) -> list[UnitVector]:
        """The stored vectors of these records made by ``model``."""
        ...

    async def save(self, vectors: Sequence[UnitVector]) -> None:
        """Insert or replace (per unit) these vectors in one transaction."""
        ...

    async def prune(self) -> int:
        """Delete vectors whose record no longer exists; returns how many."""
        ...
