"""Ranking, token-budgeted injection, its modes, and what a fork can see."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from engine.memory.bm25 import (
    Bm25Index,
    relevance_scores,
    tokenize,
    weighted_query,
)
from engine.memory.injection import (
    MAX_PINNED_OPEN_LOOPS,
    MEMORY_BUDGET_TOKENS,
    PREAMBLE,
    RECENT_TURN_WEIGHT,
    RELEVANCE_WEIGHT,
    TIE_BREAK_WEIGHT,
    InjectionMode,
    InjectionPolicy,
    rank_memories,
    select_memories,
)
from engine.memory.lineage import LineageSegment, in_scope, visible_records
from engine.memory.records import (
    MACRO_TIER,
    Lifecycle,
    MemoryKind,
    MemoryRecord,
    MemoryRelation,
    MemoryScope,
    RelationKind,
)
from tests.test_memory.helpers import T0, count_tokens, record, view


def _facts(n: int, floor: int = 1) -> list[MemoryRecord]:
    return [
        record(
            f"f{i}",
            f"villager number {i} tends goats and sheep near the river",
            key=f"villager.{i}",
            floor=floor,
            importance=0.5,
        )
        for i in range(n)
    ]


def test_tokenizer_handles_latin_and_cjk() -> None:
    assert tokenize("Alice's swords, the harbour!") == ["alic", "sword", "harbour"]
    assert tokenize("角色B即将离开") == ["角色", "b", "即将", "将离", "离开"]
    assert tokenize("东京タワー") == ["东京", "京タ", "タワ", "ワー"]
    assert tokenize("猫") == ["猫"]


def test_bm25_prefers_rare_matching_terms_and_cjk_matches() -> None:
    docs = {"a": "Alice keeps a dragon egg", "b": "Bob keeps goats", "c": "角色B即将离开城市"}
    index = Bm25Index.build(docs)
    query = weighted_query([("where is the dragon egg", 1.0)])
    assert index.score("a", query) > index.score("b", query) == 0
    rel = relevance_scores(docs, weighted_query([("她什么时候离开城市", 1.0)]))
    assert rel == {"a": 0.0, "b": 0.0, "c": 1.0}  # relative to the best candidate
    rel = relevance_scores(docs, query)
    assert rel["a"] == 1.0 and rel["b"] == rel["c"] == 0.0
    assert relevance_scores(docs, weighted_query([("nothing shared", 1.0)])) == dict.fromkeys(
        docs, 0.0
    )


def test_ranking_is_led_by_relevance_with_importance_and_decay_as_tie_breakers() -> None:
    records = [
        record(
            "old-relevant",
            "Alice hid the dragon egg in the well",
            key="egg",
            floor=1,
            importance=0.8,
        ),
        record("new-irrelevant", "the weather is mild", key="weather", floor=99, importance=0.5),
        record("minor", "a crow sits on the roof", key="crow", floor=99, importance=0.2),
    ]
    ranked = rank_memories(records, [], view=view(100), now=T0, message="where is the dragon egg?")
    assert [s.record.id for s in ranked] == ["old-relevant", "new-irrelevant"]  # minor < 0.35
    top, other = ranked
    assert top.relevance == 1.0 and other.relevance == 0.0
    assert top.score == pytest.approx(RELEVANCE_WEIGHT + TIE_BREAK_WEIGHT * 0.8 * top.decay)
    assert other.score == pytest.approx(TIE_BREAK_WEIGHT * 0.5 * other.decay)
    assert top.decay < 1.0
    # The recent chat is a lesser signal: it orders what the message leaves equal.
    ranked = rank_memories(
        records, [], view=view(100), now=T0, message="", recent_turns=["mild weather today"]
    )
    assert ranked[0].record.id == "new-irrelevant"
    assert ranked[0].score == pytest.approx(
        RECENT_TURN_WEIGHT + TIE_BREAK_WEIGHT * 0.5 * ranked[0].decay
    )


@pytest.mark.parametrize("mode", list(InjectionMode))
@pytest.mark.parametrize("budget", [0, 40, 120, MEMORY_BUDGET_TOKENS])
def test_every_mode_stays_within_budget(mode: InjectionMode, budget: int) -> None:
    records = (
        _facts(60)
        + [
            record(
                f"l{i}",
                f"open question {i} about the goats",
                kind=MemoryKind.OPEN_LOOP,
                floor=2,
                importance=0.6,
            )
            for i in range(10)
        ]
        + [
            record(
                f"s{i}",
                f"on floor {i} the villagers argued about goats",
                kind=MemoryKind.SUMMARY,
                scope=MemoryScope.BRANCH,
                floor=i,
                importance=0.6,
            )
            for i in range(1, 15)
        ]
    )
    policy = InjectionPolicy(mode=mode, max_tokens=budget)
    result = select_memories(
        records, [], view=view(20), now=T0, message="goats", count=count_tokens, policy=policy
    )
    assert result.tokens <= budget
    assert result.tokens == (count_tokens(result.text) if result.text else 0)
    assert len(result.record_ids) <= policy.max_items
    if budget >= 120:
        assert result.record_ids and result.text.startswith(PREAMBLE)
        # Greedy packing uses the budget well when candidates exceed it.
        assert result.tokens >= 0.8 * budget or len(result.record_ids) == policy.max_items
    if budget == 0:
        assert result.text == "" and result.record_ids == ()


def test_balanced_mode_mixes_kinds_and_dual_mode_has_sections() -> None:
    records = _facts(30) + [
        record("loop", "who stole the goats", kind=MemoryKind.OPEN_LOOP, importance=0.6),
        record(
            "micro",
            "the goats vanished",
            kind=MemoryKind.SUMMARY,
            scope=MemoryScope.BRANCH,
            importance=0.6,
        ),
        record(
            "macro",
            "a long feud over goats",
            kind=MemoryKind.SUMMARY,
            tier=MACRO_TIER,
            scope=MemoryScope.BRANCH,
            importance=0.65,
        ),
    ]
    balanced = select_memories(
        records, [], view=view(3), now=T0, message="goats", count=count_tokens
    )
    assert {"loop", "micro", "macro"} <= set(balanced.record_ids)
    importance = select_memories(
        records,
        [],
        view=view(3),
        now=T0,
        message="goats",
        count=count_tokens,
        policy=InjectionPolicy(mode=InjectionMode.IMPORTANCE),
    )
    assert {"loop", "micro"} <= set(importance.record_ids)
    dual = select_memories(
        records,
        [],
        view=view(3),
        now=T0,
        message="goats",
        count=count_tokens,
        policy=InjectionPolicy(mode=InjectionMode.DUAL_SUMMARY),
    )
    for header in (
        "[Memory Facts]",
        "[Open Loops]",
        "[Recent Micro Summaries]",
        "[Macro Summary]",
    ):
        assert header in dual.text
    facts_in_dual = [i for i in dual.record_ids if i.startswith("f")]
    assert len(facts_in_dual) >= 10  # share cap of 10 plus the second pass


def test_deprecated_and_superseded_records_are_never_injected_compacted_only_recalled() -> None:
    records = [
        record("old", "Alice lives in the harbour", key="alice.home", floor=1),
        record("new", "Alice lives in the tower", key="alice.home", floor=5),
        record("dep", "Alice owns a cat", key="alice.pet", lifecycle=Lifecycle.DEPRECATED),
        record(
            "micro",
            "Alice moved home",
            kind=MemoryKind.SUMMARY,
            scope=MemoryScope.BRANCH,
            lifecycle=Lifecycle.COMPACTED,
            floor=4,
        ),
        record("loop", "Will Alice move?", kind=MemoryKind.OPEN_LOOP, floor=2),
        record(
            "res",
            "Alice moved to the tower",
            kind=MemoryKind.SUMMARY,
            scope=MemoryScope.BRANCH,
            floor=5,
        ),
    ]
    relations = [
        MemoryRelation(
            source_id="new", target_id="old", kind=RelationKind.UPDATES, created_at=T0, floor_no=5
        ),
        MemoryRelation(
            source_id="res",
            target_id="loop",
            kind=RelationKind.RESOLVES,
            created_at=T0,
            floor_no=5,
        ),
    ]
    for mode in InjectionMode:
        result = select_memories(
            records,
            relations,
            view=view(6),
            now=T0,
            message="where does Alice live, her cat, will she move home",
            count=count_tokens,
            policy=InjectionPolicy(mode=mode),
        )
        # The compacted micro shares words with the message: recalled in its own section.
        assert set(result.record_ids) == {"new", "res", "micro"}
        assert "harbour" not in result.text and "cat" not in result.text
        assert result.text.endswith("[Recalled From Earlier]\n- Alice moved home")
        unrelated = select_memories(
            records,
            relations,
            view=view(6),
            now=T0,
            message="where does she live",
            count=count_tokens,
            policy=InjectionPolicy(mode=mode),
        )
        assert "micro" not in unrelated.record_ids


def test_fork_sees_parent_up_to_fork_floor_and_its_own_records() -> None:
    fork_view = view(
        12,
        branch="fork",
        lineage=(
            LineageSegment(branch_id="fork"),
            LineageSegment(branch_id="main", until_floor=10),
        ),
    )
    records = [
        record("before", "the bridge stands", key="bridge", floor=9),
        record("after", "the bridge fell", key="bridge", floor=11),  # main, after the fork
        record("own", "the fork found a boat", key="boat", floor=11, branch="fork"),
        record("sibling", "another timeline", key="x", floor=11, branch="other"),
        record("global", "magic is rare", key="magic", scope=MemoryScope.GLOBAL, floor=50),
        record("branch-main", "main-only note", key="note", scope=MemoryScope.BRANCH, floor=3),
        record(
            "floor-here",
            "this floor only",
            key="f",
            scope=MemoryScope.FLOOR,
            floor=12,
            branch="fork",
        ),
        record(
            "floor-other",
            "another floor",
            key="g",
            scope=MemoryScope.FLOOR,
            floor=11,
            branch="fork",
        ),
        # Deprecated on main after the fork point: still live as far as the fork knows.
        record(
            "ended-later",
            "the king lives",
            key="king",
            floor=5,
            lifecycle=Lifecycle.DEPRECATED,
            ended_branch="main",
            ended_floor=11,
        ),
        record(
            "ended-before",
            "the queen lives",
            key="queen",
            floor=5,
            lifecycle=Lifecycle.DEPRECATED,
            ended_branch="main",
            ended_floor=8,
        ),
    ]
    relations = [
        MemoryRelation(
            source_id="after",
            target_id="before",
            kind=RelationKind.UPDATES,
            created_at=T0,
            floor_no=11,
        )
    ]
    seen = {r.id for r in visible_records(records, relations, fork_view)}
    assert seen == {"before", "own", "global", "branch-main", "floor-here", "ended-later"}
    main_seen = {r.id for r in visible_records(records, relations, view(12))}
    assert "before" not in main_seen and "after" in main_seen and "own" not in main_seen


def test_other_realms_and_sessions_are_invisible() -> None:
    stranger = record("s", "secret", key="k")
    assert in_scope(stranger, view(1))
    assert not in_scope(replace(stranger, realm_id="realm-2"), view(1))
    assert not in_scope(replace(stranger, session_id="session-2"), view(1))
    assert not in_scope(replace(stranger, scope=MemoryScope.GLOBAL, scope_id="realm-2"), view(1))


def test_one_injected_fact_per_key_narrowest_scope_wins() -> None:
    records = [
        record("chat", "Alice is a baker", key="alice.job", scope=MemoryScope.CHAT),
        record("branch", "Alice is a pirate", key="alice.job", scope=MemoryScope.BRANCH),
    ]
    result = select_memories(
        records, [], view=view(2), now=T0, message="Alice job", count=count_tokens
    )
    assert result.record_ids == ("branch",)


def test_decay_counts_floors_and_time() -> None:
    fresh = record("fresh", "the tide is high", key="tide", floor=100)
    stale = record(
        "stale", "the tide is high", key="tide2", floor=100, created_at=T0 - timedelta(days=365)
    )
    ranked = {
        s.record.id: s
        for s in rank_memories([fresh, stale], [], view=view(100), now=T0, message="tide")
    }
    assert ranked["fresh"].decay == 1.0
    assert ranked["stale"].decay < ranked["fresh"].decay


def test_importance_mode_prefers_value_per_token_and_pins_urgent_loops() -> None:
    bulky = record(
        "bulky",
        "goats " + "and the long story of the goats " * 60,
        kind=MemoryKind.SUMMARY,
        tier=MACRO_TIER,
        scope=MemoryScope.BRANCH,
        importance=0.9,
    )
    small = [
        record(f"s{i}", f"goat {i} is named Bleat{i}", key=f"goat.{i}", importance=0.7)
        for i in range(12)
    ]
    urgent = record("urgent", "the barn is on fire", kind=MemoryKind.OPEN_LOOP, importance=0.9)
    result = select_memories(
        [bulky, *small, urgent],
        [],
        view=view(2),
        now=T0,
        message="the goats",
        count=count_tokens,
        policy=InjectionPolicy(mode=InjectionMode.IMPORTANCE, max_tokens=200),
    )
    assert result.record_ids[0] == "urgent"  # pinned: importance >= the pin threshold
    assert "bulky" not in result.record_ids
    assert len([i for i in result.record_ids if i.startswith("s")]) >= 8


def test_only_a_few_open_loops_are_pinned() -> None:
    loops = [
        record(f"l{i:02}", f"thread {i}", kind=MemoryKind.OPEN_LOOP, importance=0.7)
        for i in range(MAX_PINNED_OPEN_LOOPS + 4)
    ]
    minor = record("minor-loop", "a small thread", kind=MemoryKind.OPEN_LOOP, importance=0.5)
    ranked = rank_memories([*loops, minor], [], view=view(2), now=T0, message="")
    assert sum(s.pinned for s in ranked) == MAX_PINNED_OPEN_LOOPS
    assert not next(s for s in ranked if s.record.id == "minor-loop").pinned
