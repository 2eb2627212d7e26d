"""Semantic memory: embedding units in the background and the query's vector at turn time.

When an embeddings endpoint is configured (an :class:`~engine.memory.ports.Embedder`) and the
storage keeps vectors (a :class:`~engine.memory.ports.VectorStore`), the memory service holds
a :class:`SemanticMemory`:

* After a turn's records are written it asks for the ``embed`` job of the session
  (:meth:`SemanticMemory.schedule`); the scheduler runs it under its lease
  (:meth:`SemanticMemory.run`): every unit of the session's records without a vector of the
  configured model, or whose text changed since, is embedded in batches of
  :data:`EMBED_BATCH_SIZE`, at most :data:`MAX_EMBED_UNITS_PER_RUN` per run (a backlog drains
  over several runs, the job asks for its next run itself). A model change re-embeds
  everything, replacing the old vectors. Nothing of this runs on a turn's path.
* At turn time :meth:`SemanticMemory.signal` embeds the message (bounded by
  :data:`QUERY_EMBED_TIMEOUT_S`, cached for repeated messages) and loads the candidates'
  vectors; on a timeout or an error it returns None, so ranking is BM25 alone, and says so in
  the log once (again only after it recovered).

With no embedder the service has no :class:`SemanticMemory`: nothing is queued, BM25 alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from engine.errors import EngineError
from engine.memory.errors import MemoryPolicyError
from engine.memory.fusion import SemanticSignal, normalise
from engine.memory.jobs import JobType, request_run
from engine.memory.lineage import Viewpoint
from engine.memory.ports import (
    Embedder,
    MemoryQuery,
    MemoryRepository,
    UnitVector,
    VectorStore,
)
from engine.memory.records import Lifecycle, MemoryRecord, MemoryScope
from engine.memory.scoping import JobScope
from engine.memory.units import MemoryUnit, units_of
from engine.memory.worker import ensure_job

log = logging.getLogger(__name__)

EMBED_BATCH_SIZE = 64
"""Units sent to the embeddings endpoint in one request."""
MAX_EMBED_UNITS_PER_RUN = 1024
"""Units one ``embed`` job run embeds at most (the rest in the next run)."""
QUERY_EMBED_TIMEOUT_S = 2.0
"""How long a turn waits for its message's vector before ranking with BM25 alone."""
QUERY_CACHE_SIZE = 256
"""Messages whose vectors are kept (a regenerated reply asks for the same message again)."""
MAX_QUERY_CHARS = 2000
"""The message is cut to this many characters before it is embedded."""
HASH_CHARS = 16
"""Hex characters of a unit text's hash kept with its vector."""
VECTOR_CACHE_RECORDS = 20_000
"""Records whose vectors a turn keeps for the next (a record's vectors are read once, not on
every turn); only records with every unit embedded are kept."""
_EMBEDDABLE = frozenset({Lifecycle.ACTIVE, Lifecycle.COMPACTED})


def unit_hash(text: str) -> str:
    """A short hash of a unit's text: a stored vector whose hash differs is stale."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:HASH_CHARS]


def embed_scope(view: Viewpoint) -> JobScope:
    """The ``embed`` job's scope: one per session (its records and the realm-wide ones)."""
    return JobScope(
        realm_id=view.realm_id,
        session_id=view.session_id,
        scope=MemoryScope.CHAT,
        scope_id=view.session_id,
    )


def pending_units(
    records: Iterable[MemoryRecord], stored: dict[str, tuple[str, str]], model: str
) -> list[MemoryUnit]:
    """Units with no vector of ``model`` for their current text (new, changed, other model)."""
    return [
        unit
        for record in records
        if record.lifecycle in _EMBEDDABLE
        for unit in units_of(record)
        if stored.get(unit.id) != (model, unit_hash(unit.display))
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbedRun:
    """What one ``embed`` run did: units embedded and units left for the next run."""

    embedded: int
    remaining: int


class SemanticMemory:
    """Embedding jobs and the turn-time semantic signal over one embedder and vector store."""

    def __init__(
        self,
        embedder: Embedder,
        store: VectorStore,
        *,
        batch_size: int = EMBED_BATCH_SIZE,
        max_units_per_run: int = MAX_EMBED_UNITS_PER_RUN,
        query_timeout_s: float = QUERY_EMBED_TIMEOUT_S,
        cache_size: int = QUERY_CACHE_SIZE,
    ) -> None:
        if batch_size < 1 or max_units_per_run < 1 or cache_size < 0 or query_timeout_s <= 0:
            raise MemoryPolicyError(
                "embedding batch_size, max_units_per_run and query_timeout_s must be > 0"
            )
        self.embedder = embedder
        self.store = store
        self.batch_size = batch_size
        self.max_units_per_run = max_units_per_run
        self.query_timeout_s = query_timeout_s
        self.cache_size = cache_size
        self._cache: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._vectors: OrderedDict[str, tuple[UnitVector, ...]] = OrderedDict()
        self._degraded = False

    @property
    def model(self) -> str:
        """The embedding model in use."""
        return self.embedder.model

    # ------------------------------------------------------------------ jobs

    async def schedule(self, repo: MemoryRepository, view: Viewpoint, now: datetime) -> None:
        """Make sure the session's ``embed`` job exists and is due (after records were written)."""
        key = embed_scope(view).key
        state = await ensure_job(repo, JobType.EMBED, key, due_at=now)
        wanted = request_run(state, now=now)
        if wanted is not state:
            await repo.save_job(wanted, expected_revision=state.revision)

    async def run(self, repo: MemoryRepository, scope: JobScope, now: datetime) -> EmbedRun:
        """The ``embed`` job's body: embed the scope's pending units (bounded), store them."""
        records = await repo.query_records(
            MemoryQuery(realm_id=scope.realm_id, session_id=scope.session_id, lifecycles=None)
        )
        stored = await self.store.stored([r.id for r in records])
        model = self.model
        pending = pending_units(records, stored, model)
        todo = pending[: self.max_units_per_run]
        for start in range(0, len(todo), self.batch_size):
            batch = todo[start : start + self.batch_size]
            vectors = await self.embedder.embed([u.display for u in batch])
            if len(vectors) != len(batch):
                raise MemoryPolicyError(
                    f"embedding model {model} returned {len(vectors)} vectors for {len(batch)}"
                )
            await self.store.save(
                [
                    UnitVector(
                        record_id=unit.record.id,
                        unit_index=unit.index,
                        model=model,
                        text_hash=unit_hash(unit.display),
                        vector=normalise(vector),
                    )
                    for unit, vector in zip(batch, vectors, strict=True)
                ]
            )
        await self.store.prune()
        remaining = len(pending) - len(todo)
        if remaining:
            # The job is one-shot: the session's next commit asks for the run that goes on.
            log.info("embed job %s: %d units left for the next run", scope.key, remaining)
        return EmbedRun(embedded=len(todo), remaining=remaining)

    # ------------------------------------------------------------------ turn time

    async def query_vector(self, message: str) -> tuple[float, ...] | None:
        """The message's vector, from the cache or the endpoint within the timeout; None when
        it failed (logged once until it works again)."""
        text = message.strip()[:MAX_QUERY_CHARS]
        if not text:
            return None
        cached = self._cache.get(text)
        if cached is not None:
            self._cache.move_to_end(text)
            return cached
        try:
            async with asyncio.timeout(self.query_timeout_s):
                vectors = await self.embedder.embed([text])
        except (TimeoutError, EngineError) as exc:
            if not self._degraded:
                reason = (
                    f"no answer within {self.query_timeout_s:g}s"
                    if isinstance(exc, TimeoutError)
                    else str(exc)
                )
                log.warning("memory ranks with BM25 alone: query embedding failed: %s", reason)
            self._degraded = True
            return None
        if self._degraded:
            log.info("memory query embedding works again")
            self._degraded = False
        if not vectors:
            return None
        vector = normalise(vectors[0])
        if self.cache_size:
            self._cache[text] = vector
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return vector

    async def signal(self, records: Sequence[MemoryRecord], message: str) -> SemanticSignal | None:
        """The semantic signal for ranking ``records`` against ``message``, or None (BM25
        alone): no query vector, or no candidate embedded yet."""
        query = await self.query_vector(message)
        if query is None:
            return None
        try:
            stored = await self._stored_vectors(records)
        except EngineError as exc:
            log.warning("memory ranks with BM25 alone: vectors not loaded: %s", exc)
            return None
        units: dict[str, tuple[float, ...]] = {}
        for record in records:
            vectors = stored.get(record.id, ())
            if not vectors:
                continue
            shown = [unit_hash(u.display) for u in units_of(record)]
            for item in vectors:
                index = item.unit_index
                fresh = 0 <= index < len(shown) and shown[index] == item.text_hash
                if not fresh:
                    self._vectors.pop(record.id, None)  # re-read once it is embedded again
                elif item.dims == len(query):
                    units[item.unit_id] = item.vector
        if not units:
            return None
        return SemanticSignal(query=query, units=units)

    async def _stored_vectors(
        self, records: Sequence[MemoryRecord]
    ) -> dict[str, tuple[UnitVector, ...]]:
        """Each record's vectors of this model: from the cache, the rest from the store."""
        found = {r.id: self._vectors[r.id] for r in records if r.id in self._vectors}
        missing = [r for r in records if r.id not in found]
        if missing:
            grouped: dict[str, list[UnitVector]] = {}
            for item in await self.store.load([r.id for r in missing], self.model):
                grouped.setdefault(item.record_id, []).append(item)
            for record in missing:
                vectors = tuple(grouped.get(record.id, ()))
                found[record.id] = vectors
                if vectors and len(vectors) == len(units_of(record)):
                    self._vectors[record.id] = vectors
            while len(self._vectors) > VECTOR_CACHE_RECORDS:
                self._vectors.popitem(last=False)
        return found
