"""Every named limit of the memory engine, exercised at its bound."""

from __future__ import annotations

import json

import pytest

from engine.memory.agent_context import (
    AGENT_MAX_FACTS,
    AGENT_MAX_OUTPUT_TOKENS,
    AGENT_TEMPERATURE,
    MAX_TRANSCRIPT_CHARS,
    build_agent_context,
    build_agent_messages,
    build_agent_request,
)
from engine.memory.agent_ops import (
    MAX_AGENT_OUTPUT_CHARS,
    MAX_FACT_KEY_CHARS,
    MAX_OPEN_LOOP_CHARS,
    MAX_REASON_CHARS,
    MAX_TURN_SUMMARY_CHARS,
    validate_agent_ops,
)
from engine.memory.agent_plan import MAX_FALLBACK_MICRO_CHARS, AgentTurn, plan_agent_turn
from engine.memory.compaction import (
    MAX_COMPACTED_SUMMARY_CHARS,
    CompactionRequest,
    build_compaction_messages,
    build_compaction_request,
    plan_compaction,
    run_compaction,
)
from engine.memory.extraction import MAX_TAG_NAME_CHARS, validate_tags
from engine.memory.injection import CANDIDATE_POOL, InjectionPolicy, rank_memories
from engine.memory.jobs import MAX_ERROR_CHARS, JobPolicy, JobType, fail, lease, new_job
from engine.memory.maintenance import MAINTENANCE_BATCH, ExpiryPolicy, plan_expiry
from engine.memory.plan import MutationPlan, committed_event
from engine.memory.records import (
    MAX_SUMMARY_TIER,
    MemoryKind,
    MemoryScope,
    SequentialIds,
    tier_name,
)
from tests.test_memory.helpers import T0, count_tokens, record, view

SCOPES = {MemoryScope.CHAT}


def _ops(obj: dict[str, object]) -> list[str]:
    context = build_agent_context([], [], view=view(1), now=T0, focus="", count=count_tokens)
    return [
        d.code
        for d in validate_agent_ops(
            json.dumps(obj), context=context, allowed_scopes=SCOPES
        ).diagnostics
    ]


def test_agent_text_limits() -> None:
    assert _ops({"facts_add": [{"key": "k" * MAX_FACT_KEY_CHARS, "value": "v"}]}) == []
    assert _ops({"facts_add": [{"key": "k" * (MAX_FACT_KEY_CHARS + 1), "value": "v"}]}) == [
        "too_long"
    ]
    assert _ops({"open_loops_add": [{"text": "t" * (MAX_OPEN_LOOP_CHARS + 1)}]}) == ["too_long"]
    assert (
        _ops({"open_loops_resolve": [{"id": "L1", "resolution": "r" * (MAX_REASON_CHARS + 1)}]})[0]
        == "too_long"
    )
    assert _ops({"turn_summary": "s" * (MAX_TURN_SUMMARY_CHARS + 1)}) == ["truncated"]


def test_agent_output_length_limit_degrades() -> None:
    raw = json.dumps({"turn_summary": "x" * MAX_AGENT_OUTPUT_CHARS})
    context = build_agent_context([], [], view=view(1), now=T0, focus="", count=count_tokens)
    plan = plan_agent_turn(
        raw,
        context=context,
        records=[],
        relations=[],
        turn=AgentTurn(view=view(1), now=T0),
        new_id=SequentialIds(),
    )
    assert plan.diagnostics[0].code == "output_too_long"
    assert len(plan.new_records[0].text) == MAX_FALLBACK_MICRO_CHARS


def test_agent_context_caps_and_transcript_limit() -> None:
    facts = [record(f"f{i}", "v", key=f"k{i}") for i in range(AGENT_MAX_FACTS + 10)]
    context = build_agent_context(
        facts, [], view=view(2), now=T0, focus="k", count=len, budget=10**9
    )
    assert len(context.facts) == AGENT_MAX_FACTS
    messages = build_agent_messages(
        context, transcript=[("user", "x" * 10 * MAX_TRANSCRIPT_CHARS)], allowed_scopes=SCOPES
    )
    turn = messages[1].content.split("Latest turn (data, quoted):\n", 1)[1]
    assert len(turn) <= MAX_TRANSCRIPT_CHARS + 20
    request = build_agent_request("m", messages)
    assert request.max_tokens == AGENT_MAX_OUTPUT_TOKENS
    assert request.sampling["temperature"] == AGENT_TEMPERATURE


async def test_compacted_summary_length_limit_and_prompt() -> None:
    micros = [
        record(f"m{i}", "event", kind=MemoryKind.SUMMARY, scope=MemoryScope.BRANCH, floor=i)
        for i in range(1, 13)
    ]
    task = plan_compaction(micros, head_floor=12)
    assert task is not None

    async def verbose(_: CompactionRequest) -> str:
        return "w" * (MAX_COMPACTED_SUMMARY_CHARS * 2)

    plan = await run_compaction(
        task, summariser=verbose, now=T0, head_floor=12, new_id=SequentialIds()
    )
    assert len(plan.new_records[0].text) == MAX_COMPACTED_SUMMARY_CHARS
    # Never a silent cut: a warning names the limit, in the plan and in the compacted event.
    assert [d.code for d in plan.diagnostics] == ["summary_bounded"]
    assert f"max_summary_chars={MAX_COMPACTED_SUMMARY_CHARS}" in plan.diagnostics[0].message
    (event,) = plan.events
    assert event.payload["warnings"][0]["code"] == "summary_bounded"
    request = CompactionRequest(
        tier=2, texts=("a <|im_start|>", "b"), coverage_start=1, coverage_end=2
    )
    messages = build_compaction_messages(request)
    assert "<|im_start|>" not in messages[1].content and "1. a" in messages[1].content
    assert build_compaction_request("m", request).metadata["tier"] == "macro"
    assert tier_name(MAX_SUMMARY_TIER) == f"tier{MAX_SUMMARY_TIER}"


def test_tag_name_length_limit() -> None:
    assert validate_tags(["t" * MAX_TAG_NAME_CHARS]) == ("t" * MAX_TAG_NAME_CHARS,)
    with pytest.raises(Exception, match="usable"):
        validate_tags(["t" * (MAX_TAG_NAME_CHARS + 1)])


def test_candidate_pool_limit() -> None:
    facts = [record(f"f{i}", "v", key=f"k{i}") for i in range(CANDIDATE_POOL + 5)]
    assert len(rank_memories(facts, [], view=view(2), now=T0, message="v")) == CANDIDATE_POOL
    small = InjectionPolicy(candidate_pool=3)
    assert len(rank_memories(facts, [], view=view(2), now=T0, message="v", policy=small)) == 3


def test_maintenance_batch_limit() -> None:
    loops = [
        record(f"l{i}", "x", kind=MemoryKind.OPEN_LOOP, created_at=T0)
        for i in range(MAINTENANCE_BATCH + 7)
    ]
    later = T0 + (ExpiryPolicy().open_loop_max_age or T0 - T0)
    assert len(plan_expiry(loops, now=later).changes) == MAINTENANCE_BATCH
    assert len(plan_expiry(loops, now=later, policy=ExpiryPolicy(batch=5)).changes) == 5


def test_job_error_text_is_bounded() -> None:
    policy = JobPolicy()
    job = lease(new_job(JobType.COMPACT, "s", due_at=T0), owner="w", now=T0, policy=policy)
    failed = fail(job, owner="w", now=T0, error="e" * (MAX_ERROR_CHARS * 3), policy=policy)
    assert len(failed.last_error or "") == MAX_ERROR_CHARS


def test_committed_event_lists_the_plan() -> None:
    fact = record("f", "v", key="k")
    event = committed_event(MutationPlan(new_records=(fact,)), floor_no=3)
    assert event.name == "memory.committed" and event.payload["added"] == ["f"]
    assert event.payload["floor_no"] == 3 and event.payload["changed"] == []
