"""Scoring one turn's candidate units: the ranking :mod:`engine.memory.injection` packs.

The formula and the order are :mod:`engine.memory.injection`'s (its module docstring); this
module computes them on the turn's path (issue 18) without per-candidate work that does not
change between turns. What depends only on a record value (its units, their ids, displayed
texts and order keys, the parts of its decay) is kept per record value (:func:`_facts`,
keyed by identity like :func:`engine.memory.units.record_units`), so a turn pays only for the
records written or marked since the last one, plus the arithmetic that moves with the message,
the floor and the clock. A candidate is a light tuple (:class:`RankedUnit`), not a frozen
dataclass, since every turn makes hundreds.

Everything here gives the same floats in the same order as scoring each unit afresh (tested
against a direct computation and by ``bench/memory_locomo.py``'s unchanged figures).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Final, NamedTuple

from engine.memory.bm25 import cached_index, relative_scores, weighted_query
from engine.memory.decay import DecayParts, DecayPolicy, decay_parts, decays_at
from engine.memory.fusion import SemanticSignal
from engine.memory.lineage import Viewpoint, partition_visible
from engine.memory.query_expansion import expand_query
from engine.memory.records import MemoryKind, MemoryRecord, MemoryRelation, MemoryScope
from engine.memory.units import MemoryUnit, record_units

if TYPE_CHECKING:  # the policy's module imports this one
    from engine.memory.injection import InjectionPolicy

RANK_FACTS_CACHE_SIZE: Final = 16_384
"""Record values whose ranking facts (units, order keys, decay parts) are kept between turns:
a turn ranks the same record values as the one before, except those written or marked since."""

_SCOPE_RANK = {
    MemoryScope.FLOOR: 0,
    MemoryScope.BRANCH: 1,
    MemoryScope.CHAT: 2,
    MemoryScope.GLOBAL: 3,
}

UnitOrder = tuple[int, str, int]
"""The tail of a unit's sort key: newer first (``-floor_end``), then record id, then index."""


class RankedUnit(NamedTuple):
    """A candidate unit with the parts of its score (relevance and recent in [0, 1]), a tuple
    because a turn makes one per candidate; ``recalled``: from a record compacted into a
    summary."""

    unit: MemoryUnit
    score: float
    decay: float
    relevance: float
    recent: float
    pinned: bool
    recalled: bool

    @property
    def record(self) -> MemoryRecord:
        """The record the unit belongs to."""
        return self.unit.record


class _Facts(NamedTuple):
    record: MemoryRecord
    units: tuple[MemoryUnit, ...]
    ids: tuple[str, ...]
    displays: tuple[str, ...]
    orders: tuple[UnitOrder, ...]
    has_text: bool
    policy: DecayPolicy
    decay: DecayParts


_FACTS: dict[int, _Facts] = {}
_FACTS_LOCK = threading.Lock()  # services may rank from worker threads too


def _facts(record: MemoryRecord, policy: DecayPolicy) -> _Facts:
    """What ranking needs of ``record`` that does not move with the turn, kept for this very
    record value and decay policy (keyed by identity; the entry holds the record, so the key
    is never reused while kept). The oldest entry goes first when the cache is full."""
    kept = _FACTS.get(id(record))  # one dict read: atomic, no lock needed to look
    if (
        kept is not None
        and kept.record is record
        and (kept.policy is policy or kept.policy == policy)
    ):
        return kept
    units, ids, displays = record_units(record)
    found = _Facts(
        record,
        units,
        ids,
        displays,
        tuple((-u.floor_end, record.id, u.index) for u in units),
        bool(record.text.strip()),
        policy,
        decay_parts(record, policy),
    )
    with _FACTS_LOCK:
        _FACTS[id(record)] = found
        while len(_FACTS) > RANK_FACTS_CACHE_SIZE:
            del _FACTS[next(iter(_FACTS))]
    return found


def _dedupe_fact_keys(records: Iterable[MemoryRecord]) -> list[MemoryRecord]:
    best: dict[str, MemoryRecord] = {}
    others: list[MemoryRecord] = []
    for record in records:
        if record.kind is not MemoryKind.FACT or not record.key:
            others.append(record)
            continue
        current = best.get(record.key)
        if current is None or _fact_precedence(record) < _fact_precedence(current):
            best[record.key] = record
    return others + list(best.values())


def _fact_precedence(record: MemoryRecord) -> tuple[int, int, str]:
    return (_SCOPE_RANK[record.scope], -record.created_floor, record.id)


def _candidates(
    records: Iterable[MemoryRecord],
    relations: Iterable[MemoryRelation],
    view: Viewpoint,
    policy: InjectionPolicy,
) -> tuple[list[_Facts], frozenset[str]]:
    """Live and compacted records worth ranking (their facts), and the compacted ones' ids."""
    visible = partition_visible(records, relations, view)
    decay, least = policy.decay, policy.min_importance
    live = [_facts(r, decay) for r in _dedupe_fact_keys(visible.live) if r.importance >= least]
    compacted = [_facts(r, decay) for r in visible.compacted if r.importance >= least]
    return [f for f in live + compacted if f.has_text], frozenset(
        f.record.id for f in compacted if f.has_text
    )


def score_units(
    records: Iterable[MemoryRecord],
    relations: Iterable[MemoryRelation],
    view: Viewpoint,
    now: datetime,
    message: str,
    recent_turns: Sequence[str],
    policy: InjectionPolicy,
    semantic: SemanticSignal | None = None,
) -> list[RankedUnit]:
    """Every injectable unit for this viewer scored, best first (pinned loops first; ties:
    newer, then record id, then index), the pinned ones beyond ``max_pinned_open_loops``
    unpinned. Units of compacted records only when they share a word with the message or the
    recent chat."""
    pool, compacted_ids = _candidates(records, relations, view, policy)
    ids: list[str] = []
    displays: list[str] = []
    for facts in pool:
        ids.extend(facts.ids)
        displays.extend(facts.displays)
    index = cached_index(tuple(ids), tuple(displays))
    # Words of the message no candidate holds are matched to ones they do (roadtrip, grandma).
    relevance = relative_scores(index, expand_query(index, weighted_query([(message, 1.0)])))
    if semantic is not None:  # embeddings configured: BM25 fused with the cosine ranking
        relevance = semantic.fuse(relevance)
    recent = relative_scores(index, weighted_query([(turn, 1.0) for turn in recent_turns]))
    relevance_weight, recent_weight = policy.relevance_weight, policy.recent_turn_weight
    tie_weight, pin_at = policy.tie_break_weight, policy.pin_open_loop_importance
    floor_no = view.floor_no
    rows: list[RankedUnit] = []
    keys: list[tuple[bool, float, UnitOrder]] = []
    add_row, add_key = rows.append, keys.append  # hundreds of units a turn: the loop is hot
    decays = decays_at([facts.decay for facts in pool], floor_no, now)
    for facts, decay in zip(pool, decays, strict=True):
        record = facts.record
        recalled = record.id in compacted_ids
        pinned = (
            not recalled and record.kind is MemoryKind.OPEN_LOOP and record.importance >= pin_at
        )
        # The same sum, in the same order, as weight x relevance + weight x recent + tie-break.
        tie = tie_weight * record.importance * decay
        for unit, unit_id, order in zip(facts.units, facts.ids, facts.orders, strict=True):
            rel, near = relevance[unit_id], recent[unit_id]
            if recalled and rel <= 0 and near <= 0:
                continue
            score = relevance_weight * rel + recent_weight * near + tie
            add_row(RankedUnit(unit, score, decay, rel, near, pinned, recalled))
            add_key((not pinned, -score, order))
    ranked = _sorted(rows, keys)
    # Only the best few loops stay pinned, so a pile of open threads cannot eat the budget.
    demoted = False
    for position in range(policy.max_pinned_open_loops, len(ranked)):
        if not ranked[position].pinned:
            break
        ranked[position] = ranked[position]._replace(pinned=False)
        demoted = True
    if demoted:  # the order is total (record id and index), so an unchanged list stays sorted
        ranked = _sorted(ranked, [_order_key(item) for item in ranked])
    return ranked


def _sorted(rows: list[RankedUnit], keys: list[tuple[bool, float, UnitOrder]]) -> list[RankedUnit]:
    positions = sorted(range(len(rows)), key=keys.__getitem__)
    return [rows[position] for position in positions]


def _order_key(item: RankedUnit) -> tuple[bool, float, UnitOrder]:
    unit = item.unit
    return (not item.pinned, -item.score, (-unit.floor_end, unit.record.id, unit.index))
