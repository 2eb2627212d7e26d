"""Compaction triggers, shape (keep newest 4), coverage and links; expiry and decay jobs."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest

from engine.memory.compaction import (
    FLOOR_GAP_THRESHOLD,
    KEEP_NEWEST_MICROS,
    MICRO_COUNT_THRESHOLD,
    MICRO_TOKEN_THRESHOLD,
    CompactionPolicy,
    CompactionRequest,
    CompactionTrigger,
    plan_compaction,
    run_compaction,
)
from engine.memory.errors import MemoryPolicyError
from engine.memory.maintenance import (
    MICRO_MAX_AGE,
    OPEN_LOOP_MAX_AGE,
    PURGE_DEPRECATED_AFTER,
    ExpiryPolicy,
    plan_decay,
    plan_expiry,
)
from engine.memory.records import (
    MACRO_TIER,
    MICRO_TIER,
    Lifecycle,
    MemoryKind,
    MemoryRecord,
    MemoryScope,
    RelationKind,
    SequentialIds,
)
from tests.fakes.memory_repo import InMemoryMemoryRepository
from tests.test_memory.helpers import T0, record


def micro(floor: int, text: str = "short", rid: str | None = None) -> MemoryRecord:
    return record(
        rid or f"m{floor}",
        text,
        kind=MemoryKind.SUMMARY,
        scope=MemoryScope.BRANCH,
        floor=floor,
        importance=0.6,
    )


async def summarise(request: CompactionRequest) -> str:
    """A deterministic summariser, like the offline provider's."""
    return f"tier {request.tier}: floors {request.coverage_start}-{request.coverage_end}"


def test_count_trigger_keeps_newest_four() -> None:
    micros = [micro(5, rid=f"m{i}") for i in range(MICRO_COUNT_THRESHOLD)]  # one floor: no gap
    task = plan_compaction(micros, head_floor=5)
    assert task is not None and task.trigger is CompactionTrigger.COUNT
    assert len(task.sources) == MICRO_COUNT_THRESHOLD - KEEP_NEWEST_MICROS
    assert plan_compaction(micros[:-1], head_floor=5) is None


def test_token_trigger_compacts_oldest_when_enough() -> None:
    big = "word " * 120  # 150 tokens each; 7 of them pass 900
    micros = [micro(10 + i, big) for i in range(7)]
    assert sum(m.token_estimate for m in micros) >= MICRO_TOKEN_THRESHOLD
    assert len(micros) < MICRO_COUNT_THRESHOLD
    task = plan_compaction(micros, head_floor=16)
    assert task is not None and task.trigger is CompactionTrigger.TOKENS
    assert [s.id for s in task.sources] == ["m10", "m11", "m12"]


def test_floor_gap_trigger_fires_even_before_the_first_macro() -> None:
    micros = [micro(f) for f in (1, 2, 3, 4, 5, 6, 7)]
    assert plan_compaction(micros, head_floor=FLOOR_GAP_THRESHOLD - 1) is None
    task = plan_compaction(micros, head_floor=FLOOR_GAP_THRESHOLD)
    assert task is not None and task.trigger is CompactionTrigger.FLOOR_GAP
    macro = record(
        "M",
        "older",
        kind=MemoryKind.SUMMARY,
        tier=MACRO_TIER,
        scope=MemoryScope.BRANCH,
        coverage_start=1,
        coverage_end=10,
        floor=10,
    )
    later = [micro(f) for f in range(11, 18)]
    assert plan_compaction([macro, *later], head_floor=21) is None
    task = plan_compaction([macro, *later], head_floor=22)
    assert task is not None and task.trigger is CompactionTrigger.FLOOR_GAP
    assert task.coverage_start == 11


def test_forced_and_policy_is_configurable() -> None:
    micros = [micro(f) for f in range(1, 8)]
    assert plan_compaction(micros, head_floor=7) is None
    forced = plan_compaction(micros, head_floor=7, force=True)
    assert forced is not None and forced.trigger is CompactionTrigger.FORCED
    policy = CompactionPolicy(micro_count_threshold=5, keep_newest=1)
    task = plan_compaction(micros, head_floor=7, policy=policy)
    assert task is not None and len(task.sources) == 6
    with pytest.raises(MemoryPolicyError):
        CompactionPolicy(min_sources=5, max_sources=3)
    with pytest.raises(MemoryPolicyError):
        CompactionPolicy(fold_batch=9)


def test_compaction_never_straddles_a_fork_floor() -> None:
    micros = [micro(f) for f in range(1, 13)]
    task = plan_compaction(micros, head_floor=12, barrier_floors=[5])
    assert task is not None and [s.created_floor for s in task.sources] == [1, 2, 3, 4, 5]


async def test_run_compaction_links_each_source_once_and_marks_it_compacted() -> None:
    micros = [micro(f) for f in range(1, 13)]
    task = plan_compaction(micros, head_floor=12)
    assert task is not None
    plan = await run_compaction(
        task,
        summariser=summarise,
        now=T0,
        head_floor=12,
        new_id=SequentialIds("M"),
        job_id="job-1",
    )
    (macro,) = plan.new_records
    assert macro.tier == MACRO_TIER and (macro.coverage_start, macro.coverage_end) == (1, 8)
    assert macro.provenance.job_id == "job-1" and macro.provenance.source.value == "compaction"
    assert {c.record_id for c in plan.changes} == {f"m{f}" for f in range(1, 9)}
    assert all(c.new is Lifecycle.COMPACTED for c in plan.changes)
    kinds = Counter((r.kind, r.target_id) for r in plan.relations)
    for f in range(1, 9):
        assert kinds[(RelationKind.COMPACTS, f"m{f}")] == 1
        assert kinds[(RelationKind.DERIVED_FROM, f"m{f}")] == 1


async def test_empty_or_long_summaries_fall_back_and_errors_propagate() -> None:
    task = plan_compaction([micro(f) for f in range(1, 13)], head_floor=12)
    assert task is not None

    async def empty(_: CompactionRequest) -> str:
        return "  "

    async def broken(_: CompactionRequest) -> str:
        raise RuntimeError("model down")

    plan = await run_compaction(
        task, summariser=empty, now=T0, head_floor=12, new_id=SequentialIds("M")
    )
    assert plan.new_records[0].text == " ".join(["short"] * 8)
    assert plan.diagnostics[0].code == "empty_summary"
    with pytest.raises(RuntimeError):
        await run_compaction(
            task, summariser=broken, now=T0, head_floor=12, new_id=SequentialIds("M")
        )


async def test_long_run_keeps_coverage_contiguous_and_folds_tiers() -> None:
    repo = InMemoryMemoryRepository()
    ids = SequentialIds("S")
    policy = CompactionPolicy()
    for floor in range(1, 401):
        if floor % 7 != 0:  # some floors have no micro: coverage must still have no gaps
            await repo.add_records([micro(floor)])
        while True:
            summaries = [r for r in repo.records.values() if r.kind is MemoryKind.SUMMARY]
            task = plan_compaction(summaries, head_floor=floor, policy=policy)
            if task is None:
                break
            await repo.apply_plan(
                await run_compaction(
                    task, summariser=summarise, now=T0, head_floor=floor, new_id=ids
                )
            )
    records = list(repo.records.values())
    active = [r for r in records if r.lifecycle is Lifecycle.ACTIVE]
    micros = [r for r in active if r.tier == MICRO_TIER]
    assert len(micros) <= MICRO_COUNT_THRESHOLD
    for tier in range(MACRO_TIER, 8):
        assert len([r for r in active if r.tier == tier]) < policy.fold_count_threshold
    assert max(r.tier or 0 for r in active) >= 3  # macros were folded into a higher tier
    # Higher summaries tile the story from floor 1 with no gap or overlap (absorbing floors
    # that had no micro); the active micros follow them.
    spans = sorted((r.coverage_start, r.coverage_end) for r in active if r.tier != MICRO_TIER)
    assert spans[0][0] == 1
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert start == end + 1
    assert min(m.coverage_start or 0 for m in micros) > spans[-1][1]
    # Every floor that had a micro is covered by exactly one active summary.
    for floor in (f for f in range(1, 401) if f % 7 != 0):
        covering = [r for r in active if (r.coverage_start or 0) <= floor <= (r.coverage_end or 0)]
        assert len(covering) == 1, floor
    # Every compacted summary is linked from exactly one compacting summary.
    compacted = {r.id for r in records if r.lifecycle is Lifecycle.COMPACTED}
    links = Counter(r.target_id for r in repo.relations if r.kind is RelationKind.COMPACTS)
    assert set(links) == compacted and set(links.values()) == {1}
    # Each higher summary covers exactly its sources' span.
    by_id = repo.records
    for summary in records:
        sources = [
            by_id[r.target_id]
            for r in repo.relations
            if r.kind is RelationKind.COMPACTS and r.source_id == summary.id
        ]
        if sources:
            assert summary.coverage_end == max(s.coverage_end or 0 for s in sources)


def test_expiry_deprecates_old_micros_and_loops_but_never_macros() -> None:
    now = T0 + MICRO_MAX_AGE + timedelta(days=1)
    records = [
        micro(1),
        record(
            "young-micro",
            "x",
            kind=MemoryKind.SUMMARY,
            scope=MemoryScope.BRANCH,
            created_at=now - MICRO_MAX_AGE + timedelta(seconds=1),
        ),
        record("macro", "x", kind=MemoryKind.SUMMARY, tier=MACRO_TIER, created_at=T0),
        record(
            "old-macro",
            "x",
            kind=MemoryKind.SUMMARY,
            tier=MACRO_TIER,
            lifecycle=Lifecycle.DEPRECATED,
            created_at=T0 - timedelta(days=400),
        ),
        record("loop", "x", kind=MemoryKind.OPEN_LOOP, created_at=now - OPEN_LOOP_MAX_AGE),
        record(
            "young-loop",
            "x",
            kind=MemoryKind.OPEN_LOOP,
            created_at=now - OPEN_LOOP_MAX_AGE + timedelta(seconds=1),
        ),
        record("fact", "x", key="k", created_at=T0 - timedelta(days=1000)),
        record(
            "dead",
            "x",
            key="d",
            lifecycle=Lifecycle.DEPRECATED,
            created_at=now - PURGE_DEPRECATED_AFTER,
        ),
    ]
    plan = plan_expiry(records, now=now)
    assert {c.record_id for c in plan.changes} == {"m1", "loop"}
    assert all(c.ended_branch is None for c in plan.changes)
    assert plan.purge_ids == ("dead",)
    off = plan_expiry(records, now=now, policy=ExpiryPolicy(micro_max_age=None, purge_after=None))
    assert {c.record_id for c in off.changes} == {"loop"} and off.purge_ids == ()
    with pytest.raises(MemoryPolicyError):
        ExpiryPolicy(open_loop_max_age=timedelta(0))


def test_decay_job_forgets_only_negligible_facts() -> None:
    minor = record("minor", "a pebble", key="pebble", floor=1, importance=0.1)
    major = record("major", "the crown", key="crown", floor=1, importance=0.9)
    assert plan_decay([minor, major], now=T0, head_floor=2).is_empty
    later = T0 + timedelta(days=3650)
    plan = plan_decay([minor, major], now=later, head_floor=5000)
    assert [c.record_id for c in plan.changes] == ["minor"]
