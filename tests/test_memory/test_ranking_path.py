"""Issue 18, memory on the turn's path: the ranking kept per record value
(:mod:`engine.memory.ranking`) gives the very floats and order of scoring every unit afresh,
and its caches are bounded and follow the record values."""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import timedelta

import pytest

from engine.memory.bm25 import Bm25Index, weighted_query
from engine.memory.decay import decay_factor
from engine.memory.injection import InjectionPolicy, rank_units
from engine.memory.lineage import LineageSegment, partition_visible
from engine.memory.ranking import _FACTS, RANK_FACTS_CACHE_SIZE, _facts, score_units
from engine.memory.records import (
    Lifecycle,
    MemoryKind,
    MemoryRecord,
    MemoryRelation,
    MemoryScope,
    RelationKind,
)
from engine.memory.units import units_of
from tests.test_memory.helpers import T0, record, view

WORDS = ["lantern", "harbour", "rain", "goat", "inn", "keeper", "oak", "bridge", "fog", "key"]


def _story(rng: random.Random, size: int) -> list[MemoryRecord]:
    kinds = [MemoryKind.FACT, MemoryKind.SUMMARY, MemoryKind.OPEN_LOOP]
    records = []
    for i in range(size):
        kind = rng.choice(kinds)
        lines = [
            " ".join(rng.choices(WORDS, k=rng.randint(1, 6))) for _ in range(rng.randint(1, 3))
        ]
        records.append(
            record(
                f"r{i:03d}",
                "\n".join(lines) + ".",
                kind=kind,
                key=f"k{i % 7}" if kind is MemoryKind.FACT and i % 2 else None,
                scope=MemoryScope.BRANCH if kind is MemoryKind.SUMMARY else MemoryScope.CHAT,
                floor=1 + i,
                importance=rng.choice([0.2, 0.4, 0.6, 0.9]),
                last_used_floor=rng.choice([None, i + 3]),
            )
        )
    return records


def _precedence(r: MemoryRecord) -> tuple[int, int, str]:
    # A fact key appears once: the narrowest scope, then the newest, then the id.
    narrow = [MemoryScope.FLOOR, MemoryScope.BRANCH, MemoryScope.CHAT, MemoryScope.GLOBAL]
    return (narrow.index(r.scope), -r.created_floor, r.id)


def _direct(
    records: list[MemoryRecord],
    relations: list[MemoryRelation],
    floor: int,
    message: str,
    recent: list[str],
    policy: InjectionPolicy,
) -> list[tuple[str, float, float, float, float, bool]]:
    """Every unit scored on its own, the way the ranking is defined (no kept state)."""
    seen = view(floor)
    visible = partition_visible(records, relations, seen)
    best: dict[str, MemoryRecord] = {}
    live = []
    for r in visible.live:
        if r.kind is MemoryKind.FACT and r.key:
            current = best.get(r.key)
            if current is None or _precedence(r) < _precedence(current):
                best[r.key] = r
        else:
            live.append(r)
    usable = [
        r
        for r in [*live, *best.values(), *visible.compacted]
        if r.importance >= policy.min_importance and r.text.strip()
    ]
    compacted = {r.id for r in visible.compacted}
    units = [u for r in usable for u in units_of(r)]
    index = Bm25Index.build({u.id: u.display for u in units})

    def relative(query: dict[str, float]) -> dict[str, float]:
        raw = {u.id: index.score(u.id, query) for u in units}
        top = max(raw.values(), default=0.0)
        return {k: (v / top if top > 0 else 0.0) for k, v in raw.items()}

    rel = relative(weighted_query([(message, 1.0)]))
    near = relative(weighted_query([(line, 1.0) for line in recent]))
    rows = []
    for unit in units:
        r = unit.record
        recalled = r.id in compacted
        if recalled and rel[unit.id] <= 0 and near[unit.id] <= 0:
            continue
        decay = decay_factor(r, floor_no=floor, now=T0 + timedelta(days=3), policy=policy.decay)
        score = (
            policy.relevance_weight * rel[unit.id]
            + policy.recent_turn_weight * near[unit.id]
            + policy.tie_break_weight * r.importance * decay
        )
        pinned = (
            not recalled
            and r.kind is MemoryKind.OPEN_LOOP
            and r.importance >= policy.pin_open_loop_importance
        )
        rows.append((unit, score, decay, rel[unit.id], near[unit.id], pinned))
    rows.sort(key=lambda x: (not x[5], -x[1], -x[0].floor_end, x[0].record.id, x[0].index))
    for position in range(policy.max_pinned_open_loops, len(rows)):
        if not rows[position][5]:
            break
        rows[position] = (*rows[position][:5], False)
    rows.sort(key=lambda x: (not x[5], -x[1], -x[0].floor_end, x[0].record.id, x[0].index))
    return [(u.id, s, d, a, b, p) for u, s, d, a, b, p in rows]


def test_the_kept_ranking_gives_the_same_floats_and_order_as_scoring_afresh() -> None:
    rng = random.Random(18)
    policy = InjectionPolicy()
    records = _story(rng, 60)
    relations = [
        MemoryRelation(
            source_id="r059",
            target_id="r003",
            kind=RelationKind.COMPACTS,
            created_at=T0,
            floor_no=60,
        ),
        MemoryRelation(
            source_id="r058",
            target_id="r004",
            kind=RelationKind.UPDATES,
            created_at=T0,
            floor_no=59,
        ),
    ]
    records[3] = replace(records[3], lifecycle=Lifecycle.COMPACTED)
    for turn in range(12):
        # A turn's changes: a record written, a few marked used (new values), the clock on.
        records.append(_story(rng, 61 + turn)[-1])
        for i in rng.sample(range(len(records)), 3):
            records[i] = replace(records[i], last_used_floor=70 + turn)
        message = " ".join(rng.choices(WORDS, k=4))
        recent = [" ".join(rng.choices(WORDS, k=5)) for _ in range(3)]
        floor = 70 + turn
        got = score_units(
            records, relations, view(floor), T0 + timedelta(days=3), message, recent, policy
        )
        rows = [(i.unit.id, i.score, i.decay, i.relevance, i.recent, i.pinned) for i in got]
        assert rows == _direct(records, relations, floor, message, recent, policy)
        public = rank_units(
            records,
            relations,
            view=view(floor),
            now=T0 + timedelta(days=3),
            message=message,
            recent_turns=recent,
            policy=policy,
        )
        assert [(u.unit.id, u.score, u.pinned, u.recalled) for u in public] == [
            (i.unit.id, i.score, i.pinned, i.recalled) for i in got[: policy.candidate_pool]
        ]


def test_ranking_facts_follow_the_record_value_and_are_bounded() -> None:
    policy = InjectionPolicy()
    fact = record("f1", "The lantern hangs by the door.", floor=4)
    first = _facts(fact, policy.decay)
    assert _facts(fact, policy.decay) is first  # the same value: kept
    marked = replace(fact, last_used_floor=9)
    again = _facts(marked, policy.decay)
    assert again is not first and again.decay.floor == 9 and first.decay.floor == 4
    other = replace(policy.decay, min_factor=0.5)
    assert _facts(fact, other).decay.min_factor == 0.5  # another decay policy: its own parts
    keep = [record(f"x{i}", f"fact {i}") for i in range(RANK_FACTS_CACHE_SIZE + 10)]
    for r in keep:
        _facts(r, policy.decay)
    assert len(_FACTS) <= RANK_FACTS_CACHE_SIZE


def test_a_viewpoint_keeps_its_lineage_branch_ids_through_replace() -> None:
    seen = view(5)
    assert seen.branch_ids == ("main",)
    fork = replace(
        seen,
        branch_id="side",
        lineage=(
            LineageSegment(branch_id="side"),
            LineageSegment(branch_id="main", until_floor=3),
        ),
    )
    assert fork.branch_ids == ("side", "main") and fork == replace(fork)


def test_an_index_is_derived_from_the_kept_one_of_the_same_chat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from engine.memory import bm25

    ours = {f"ours-{i}": f"lantern harbour {i}" for i in range(40)}
    theirs = {f"theirs-{i}": f"goat bridge {i}" for i in range(40)}
    first = bm25.cached_index(tuple(ours), tuple(ours.values()))
    bm25.cached_index(tuple(theirs), tuple(theirs.values()))  # another chat ranked since
    ours["ours-new"] = "fog over the harbour"
    # The most recent index shares nothing with the next turn's set: ours is chosen, from
    # BASE_SAMPLE_IDS ids spread over the set.
    assert len(ours) > bm25.BASE_SAMPLE_IDS
    assert bm25._base_for(tuple(ours)) is first

    def no_fresh_build(documents: object) -> object:
        raise AssertionError("derived from the other chat's index: built afresh")

    monkeypatch.setattr(bm25.Bm25Index, "build", no_fresh_build)
    derived = bm25.cached_index(tuple(ours), tuple(ours.values()))
    monkeypatch.undo()
    fresh = bm25.Bm25Index.build(ours)
    assert (derived.doc_freq, derived.average_length) == (fresh.doc_freq, fresh.average_length)
