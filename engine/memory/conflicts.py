"""At most one active fact per key: the deterministic same-key resolver.

Facts conflict when they share (scope, scope id, key). The winner is, in order: a fact written
in the current plan, the later floor, the later update time, the higher importance, the later
creation time, the greater id. Every loser is deprecated and linked ``winner --updates-->
loser``; when the losing value differs and nobody asked for an update explicitly, a
``contradicts`` edge records the silent contradiction as well.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from datetime import datetime

from engine.memory.lineage import Viewpoint
from engine.memory.plan import LifecycleChange
from engine.memory.records import (
    Lifecycle,
    MemoryKind,
    MemoryRecord,
    MemoryRelation,
    MemoryScope,
    RelationKind,
)

FactBucket = tuple[MemoryScope, str, str]


def bucket_of(record: MemoryRecord) -> FactBucket | None:
    """The (scope, scope id, key) a fact competes in; None for records without a key."""
    if record.kind is not MemoryKind.FACT or not record.key:
        return None
    return (record.scope, record.scope_id, record.key)


def _precedence(record: MemoryRecord, fresh: Collection[str]) -> tuple[object, ...]:
    return (
        record.id in fresh,
        record.created_floor,
        record.updated_at or record.created_at,
        record.importance,
        record.created_at,
        record.id,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolution:
    """Lifecycle changes and relations that leave one active fact per key."""

    changes: tuple[LifecycleChange, ...]
    relations: tuple[MemoryRelation, ...]
    losers: tuple[str, ...]


def resolve_key_conflicts(
    facts: Iterable[MemoryRecord],
    *,
    view: Viewpoint,
    now: datetime,
    fresh_ids: Collection[str] = (),
    explicit_updates: Collection[tuple[str, str]] = (),
) -> Resolution:
    """Pick one winner per key among ``facts`` (all live for ``view``).

    ``fresh_ids`` are facts written by the plan being built (they win over stored ones);
    ``explicit_updates`` are (new id, old id) pairs that already carry an ``updates`` edge.
    """
    buckets: dict[FactBucket, list[MemoryRecord]] = defaultdict(list)
    for fact in facts:
        bucket = bucket_of(fact)
        if bucket is not None:
            buckets[bucket].append(fact)
    changes: list[LifecycleChange] = []
    relations: list[MemoryRelation] = []
    losers: list[str] = []
    explicit = set(explicit_updates)
    for bucket in sorted(buckets):
        members = buckets[bucket]
        if len(members) < 2:
            continue
        members.sort(key=lambda r: _precedence(r, fresh_ids), reverse=True)
        winner = members[0]
        for loser in members[1:]:
            losers.append(loser.id)
            if loser.id not in fresh_ids and loser.lifecycle is Lifecycle.ACTIVE:
                changes.append(
                    LifecycleChange(
                        record_id=loser.id,
                        expected=Lifecycle.ACTIVE,
                        new=Lifecycle.DEPRECATED,
                        at=now,
                        ended_branch=view.branch_id,
                        ended_floor=view.floor_no,
                        reason=f"conflict_resolution:{bucket[2]}",
                    )
                )
            if (winner.id, loser.id) in explicit:
                continue
            relations.append(
                MemoryRelation(
                    source_id=winner.id,
                    target_id=loser.id,
                    kind=RelationKind.UPDATES,
                    created_at=now,
                    floor_no=view.floor_no,
                    note="same key",
                )
            )
            if loser.text.strip().lower() != winner.text.strip().lower():
                relations.append(
                    MemoryRelation(
                        source_id=winner.id,
                        target_id=loser.id,
                        kind=RelationKind.CONTRADICTS,
                        created_at=now,
                        floor_no=view.floor_no,
                        note="different value, same key",
                    )
                )
    return Resolution(changes=tuple(changes), relations=tuple(relations), losers=tuple(losers))
