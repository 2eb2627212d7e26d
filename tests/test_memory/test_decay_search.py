"""Decay factors, the compaction source cap, agent listing caps, and memory search."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine.memory.agent_context import (
    AGENT_CONTEXT_TOKENS,
    AGENT_MAX_OPEN_LOOPS,
    AGENT_MAX_SUMMARIES,
    build_agent_context,
    build_agent_messages,
)
from engine.memory.compaction import MAX_COMPACTION_SOURCES, CompactionPolicy, plan_compaction
from engine.memory.decay import (
    DECAY_MIN_FACTOR,
    FACT_FLOOR_HALF_LIFE,
    FACT_TIME_HALF_LIFE,
    OPEN_LOOP_FLOOR_HALF_LIFE,
    DecayPolicy,
    HalfLife,
    decay_factor,
)
from engine.memory.errors import MemoryPolicyError
from engine.memory.injection import (
    MAX_INJECTED_ITEMS,
    InjectionMode,
    InjectionPolicy,
    select_memories,
)
from engine.memory.records import Lifecycle, MemoryKind, MemoryScope
from engine.memory.search import SEARCH_LIMIT, search_memories
from tests.test_memory.helpers import T0, count_tokens, record, view

NO_TIME = DecayPolicy(fact=HalfLife(floors=FACT_FLOOR_HALF_LIFE, time=timedelta(0)))


def test_one_floor_half_life_halves_the_factor_exactly() -> None:
    fact = record("f", "x", key="k", floor=10, created_at=T0)
    at_half = decay_factor(fact, floor_no=10 + FACT_FLOOR_HALF_LIFE, now=T0, policy=NO_TIME)
    assert at_half == pytest.approx(0.5, abs=1e-9)
    assert decay_factor(fact, floor_no=10, now=T0, policy=NO_TIME) == 1.0


def test_time_half_life_multiplies_with_floors_and_never_drops_below_the_floor() -> None:
    fact = record("f", "x", key="k", floor=10, created_at=T0)
    both = decay_factor(
        fact,
        floor_no=10 + FACT_FLOOR_HALF_LIFE,
        now=T0 + FACT_TIME_HALF_LIFE,
        policy=DecayPolicy(),
    )
    assert both == pytest.approx(0.25, abs=1e-9)
    ancient = decay_factor(
        fact, floor_no=10**6, now=T0 + timedelta(days=10**5), policy=DecayPolicy()
    )
    assert ancient == DECAY_MIN_FACTOR


def test_decay_counts_from_last_use_and_by_kind() -> None:
    used = record("f", "x", key="k", floor=10, created_at=T0, last_used_floor=100)
    assert decay_factor(used, floor_no=100, now=T0, policy=NO_TIME) == 1.0
    loop = record("l", "x", kind=MemoryKind.OPEN_LOOP, floor=0, created_at=T0)
    factor = decay_factor(loop, floor_no=OPEN_LOOP_FLOOR_HALF_LIFE, now=T0, policy=DecayPolicy())
    assert factor == pytest.approx(0.5, abs=1e-9)
    with pytest.raises(MemoryPolicyError):
        DecayPolicy(min_factor=1.5)
    with pytest.raises(MemoryPolicyError):
        DecayPolicy(fact=HalfLife(floors=-1, time=timedelta(0)))


def test_compaction_takes_at_most_the_source_cap() -> None:
    micros = [
        record(f"m{i}", "x", kind=MemoryKind.SUMMARY, scope=MemoryScope.BRANCH, floor=i)
        for i in range(1, 31)
    ]
    task = plan_compaction(micros, head_floor=30)
    assert task is not None and len(task.sources) == MAX_COMPACTION_SOURCES


def test_agent_listing_caps_open_loops() -> None:
    loops = [record(f"l{i}", f"q{i}", kind=MemoryKind.OPEN_LOOP) for i in range(40)]
    context = build_agent_context(
        loops, [], view=view(2), now=T0, focus="q", count=len, budget=10**9
    )
    assert len(context.open_loops) == AGENT_MAX_OPEN_LOOPS


def test_injection_item_cap() -> None:
    facts = [record(f"f{i}", "x", key=f"k{i}", importance=0.9) for i in range(60)]
    result = select_memories(
        facts,
        [],
        view=view(2),
        now=T0,
        message="x",
        count=count_tokens,
        policy=InjectionPolicy(mode=InjectionMode.IMPORTANCE, max_tokens=10**6),
    )
    assert len(result.record_ids) == MAX_INJECTED_ITEMS


def test_search_finds_visible_matches_only() -> None:
    records = [
        record("a", "Alice hid the dragon egg", key="egg"),
        record("b", "the dragon egg hatched", key="egg2", lifecycle=Lifecycle.DEPRECATED),
        record("c", "Bob sells goats", key="goats"),
        record("d", "角色B即将离开城市", key="cn"),
    ] + [record(f"n{i}", f"dragon number {i}", key=f"n{i}") for i in range(30)]
    hits = search_memories(records, [], view=view(2), query="dragon egg")
    assert hits[0].record.id == "a" and "b" not in {h.record.id for h in hits}
    assert len(hits) == SEARCH_LIMIT
    assert [h.record.id for h in search_memories(records, [], view=view(2), query="离开")] == ["d"]
    assert search_memories(records, [], view=view(2), query="zebra") == []


def test_agent_listing_respects_summary_cap_and_token_budget() -> None:
    summaries = [
        record(f"s{i}", f"event {i}", kind=MemoryKind.SUMMARY, scope=MemoryScope.BRANCH, floor=i)
        for i in range(1, 41)
    ]
    roomy = build_agent_context(
        summaries, [], view=view(41), now=T0, focus="k", count=count_tokens, budget=10**6
    )
    assert len(roomy.summaries) == AGENT_MAX_SUMMARIES
    assert [r.id for _, r in roomy.summaries][-1] == "s40"  # the newest are kept
    facts = [record(f"f{i}", "a long value " * 10, key=f"k{i}") for i in range(200)]
    context = build_agent_context(
        [*summaries, *facts], [], view=view(41), now=T0, focus="k", count=count_tokens
    )
    assert 0 < len(context.summaries) < AGENT_MAX_SUMMARIES
    assert 0 < len(context.facts) < len(facts)
    messages = build_agent_messages(context, transcript=(), allowed_scopes=[MemoryScope.CHAT])
    listing = messages[1].content
    assert count_tokens(listing) <= AGENT_CONTEXT_TOKENS + 20  # plus the section labels


def test_folding_stops_at_the_top_tier_and_needs_enough_sources() -> None:
    policy = CompactionPolicy(max_tier=3)
    tops = [
        record(
            f"t{i}",
            "x",
            kind=MemoryKind.SUMMARY,
            tier=3,
            scope=MemoryScope.BRANCH,
            coverage_start=i * 10 + 1,
            coverage_end=i * 10 + 10,
            floor=i * 10 + 10,
        )
        for i in range(10)
    ]
    assert plan_compaction(tops, head_floor=100, policy=policy) is None
    few = [
        record(f"m{i}", "x", kind=MemoryKind.SUMMARY, scope=MemoryScope.BRANCH, floor=i)
        for i in range(1, 7)
    ]
    # The floor gap has passed, but keeping the newest 4 leaves 2 sources: below the minimum.
    assert plan_compaction(few, head_floor=40) is None
