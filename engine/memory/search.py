"""Plain lexical search over the memories a viewer can see (the ``memory search`` command).

The search covers compacted records too (:attr:`engine.memory.lineage.VisibleRecords.searchable`):
a summary is the prompt's overview, and the records it folded stay findable word for word. A
hit says whether its record is compacted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.memory.bm25 import Bm25Index, weighted_query
from engine.memory.lineage import Viewpoint, partition_visible
from engine.memory.query_expansion import expand_query
from engine.memory.records import MemoryRecord, MemoryRelation

SEARCH_LIMIT = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchHit:
    """A record, its raw BM25 score for the query, and whether it was compacted into a
    summary (still findable, no longer in the overview)."""

    record: MemoryRecord
    score: float
    compacted: bool = False


def search_memories(
    records: Iterable[MemoryRecord],
    relations: Iterable[MemoryRelation],
    *,
    view: Viewpoint,
    query: str,
    limit: int = SEARCH_LIMIT,
) -> list[SearchHit]:
    """Visible records, compacted ones included, that share a term with ``query`` (or a term
    a word of it stands for: :mod:`engine.memory.query_expansion`), best BM25 first (ties:
    newer first)."""
    visible = partition_visible(records, relations, view)
    pool = visible.searchable
    compacted = visible.compacted_ids
    index = Bm25Index.build({r.id: r.display for r in pool})
    terms = expand_query(index, weighted_query([(query, 1.0)]))
    hits = [
        SearchHit(record=r, score=index.score(r.id, terms), compacted=r.id in compacted)
        for r in pool
    ]
    hits = [hit for hit in hits if hit.score > 0]
    hits.sort(key=lambda h: (-h.score, -h.record.created_floor, h.record.id))
    return hits[: max(0, limit)]
