"""Replays the scripted 300-floor role-play through the pure memory engine.

Per floor: tag extraction from the narrator's raw output, injection for the user's message,
the memory agent (a fake that answers the scripted ops with the aliases it was shown),
validation and planning, the in-memory repository, and due compactions. Checks the measurable
goals: recall of the relevant important facts at floor 300 within 500 tokens, no stale fact
injected, one active fact per key, bounded token cost, and compaction provenance.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pytest

from engine.memory.agent_context import AgentContext, build_agent_context, build_agent_messages
from engine.memory.agent_plan import AgentTurn, plan_agent_turn
from engine.memory.compaction import CompactionRequest, plan_compaction, run_compaction
from engine.memory.extraction import extract_memory_tags
from engine.memory.injection import InjectionMode, InjectionPolicy, select_memories
from engine.memory.lineage import visible_records
from engine.memory.records import Lifecycle, MemoryKind, RelationKind, SequentialIds
from tests.conftest import ROOT
from tests.fakes.memory_repo import InMemoryMemoryRepository
from tests.test_memory.helpers import T0, count_tokens, view

STALE = (RelationKind.UPDATES, RelationKind.RESOLVES)
DATA = ROOT / "tests" / "data" / "memory" / "roleplay_300.json"
BUDGET = 500
FLOOR_TIME = timedelta(minutes=20)
POLICY = InjectionPolicy(mode=InjectionMode.IMPORTANCE, max_tokens=BUDGET, max_items=32)


def fake_agent(script: dict[str, Any], context: AgentContext) -> str:
    """What a well-behaved model would answer, given the aliases it was shown."""
    if "raw" in script:
        return str(script["raw"])
    ops = json.loads(json.dumps(script["ops"]))
    fact_alias = {r.key: alias for alias, r in context.facts}
    loop_alias = {r.text: alias for alias, r in context.open_loops}
    adds = ops.setdefault("facts_add", [])
    for op in ops.get("facts_update", []):
        if "ref" in op:
            alias = fact_alias.get(op.pop("ref"))
            if alias is None:  # not shown to the model: it restates the fact instead
                adds.append({"key": _key_of(script, op), "value": op["value"]})
                op["drop"] = True
            else:
                op["id"] = alias
    ops["facts_update"] = [op for op in ops.get("facts_update", []) if not op.get("drop")]
    for op in ops.get("facts_deprecate", []):
        if "ref" in op:
            op["id"] = fact_alias.get(op.pop("ref"), "F0")
    for op in ops.get("open_loops_resolve", []):
        marker = f"(thread {op.pop('ref')[4:]})"
        op["id"] = next((alias for text, alias in loop_alias.items() if marker in text), "L0")
    for op in ops.get("open_loops_add", []):
        op.pop("ref", None)
    return json.dumps(ops, ensure_ascii=False)


def _key_of(script: dict[str, Any], op: dict[str, Any]) -> str:
    return next(u["ref"] for u in script["ops"]["facts_update"] if u["value"] == op["value"])


async def summarise(request: CompactionRequest) -> str:
    """Deterministic compaction, as the offline provider does it: the topics, once each."""
    topics: list[str] = []
    for text in request.texts:
        body = text.split("talk of", 1)[-1] if "talk of" in text else text.split("about", 1)[-1]
        for part in body.split(";")[0].rstrip(".").split(","):
            topic = part.strip()
            if topic and topic not in ("small matters", "nothing of note") and topic not in topics:
                topics.append(topic)
    listed = ", ".join(topics) if topics else "nothing of note"
    return f"Floors {request.coverage_start}-{request.coverage_end}: talk of {listed}."[:300]


@dataclass
class Replay:
    """The outcome of one full replay."""

    repo: InMemoryMemoryRepository
    data: dict[str, Any]
    cost: dict[int, int] = field(default_factory=dict)
    injections: dict[int, Any] = field(default_factory=dict)
    agent_events: Counter[str] = field(default_factory=Counter)
    user_tag_items: int = 0
    max_active_per_key: int = 0
    stale_injections: list[tuple[int, str]] = field(default_factory=list)


async def replay(last_floor: int = 300) -> Replay:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    repo = InMemoryMemoryRepository()
    result = Replay(repo=repo, data=data)
    ids = SequentialIds("r")
    recent: list[str] = []
    for floor in data["floors"][:last_floor]:
        n = floor["floor"]
        now = T0 + n * FLOOR_TIME
        here = view(n)
        records = list(repo.records.values())
        injected = select_memories(
            records,
            repo.relations,
            view=here,
            now=now,
            message=floor["user"],
            recent_turns=recent[-2:],
            count=count_tokens,
            policy=POLICY,
        )
        assert injected.tokens <= BUDGET
        # A record compacted into a summary may be recalled (its own section); one deprecated,
        # updated or resolved never is.
        superseded = {r.target_id for r in repo.relations if r.kind in STALE}
        result.stale_injections += [
            (n, i)
            for i in injected.record_ids
            if repo.records[i].lifecycle is Lifecycle.DEPRECATED or i in superseded
        ]
        await repo.mark_used(injected.record_ids, floor_no=n, at=now)
        result.injections[n] = injected
        result.user_tag_items += len(extract_memory_tags(floor["user"], role="user").items)
        extracted = extract_memory_tags(floor["assistant"], role="assistant")
        assert "<summary>" not in extracted.visible_text
        records = list(repo.records.values())
        context = build_agent_context(
            records,
            repo.relations,
            view=here,
            now=now,
            focus=floor["user"] + "\n" + extracted.visible_text,
            count=count_tokens,
        )
        messages = build_agent_messages(
            context,
            transcript=[("user", floor["user"]), ("narrator", extracted.visible_text)],
            allowed_scopes=AgentTurn(view=here, now=now).allowed_scopes,
            hints=[i.text for i in extracted.items],
        )
        # The cost that depends on the memory store: the agent's instructions, listing and
        # hints, plus the injected block. The turn's own transcript is left out, since its
        # length is the players' doing (the floor-300 probe message is ten times longer).
        transcript = count_tokens("\n".join(messages[1].content.split("Latest turn")[1:]))
        result.cost[n] = sum(count_tokens(m.content) for m in messages) - transcript
        result.cost[n] += injected.tokens
        plan = plan_agent_turn(
            fake_agent(floor["agent"], context),
            context=context,
            records=records,
            relations=repo.relations,
            new_id=ids,
            turn=AgentTurn(
                view=here,
                now=now,
                message_ref=f"msg-{n}",
                tag_summaries=tuple(i.text for i in extracted.items),
            ),
        )
        result.agent_events.update(e.name for e in plan.events)
        await repo.apply_plan(plan)
        while True:
            summaries = [r for r in repo.records.values() if r.kind is MemoryKind.SUMMARY]
            task = plan_compaction(summaries, head_floor=n)
            if task is None:
                break
            await repo.apply_plan(
                await run_compaction(task, summariser=summarise, now=now, head_floor=n, new_id=ids)
            )
        active = Counter(
            r.key
            for r in repo.records.values()
            if r.kind is MemoryKind.FACT and r.lifecycle is Lifecycle.ACTIVE
        )
        result.max_active_per_key = max([result.max_active_per_key, *active.values()])
        recent.append(floor["user"])
    return result


@pytest.fixture(scope="module")
def played() -> Replay:
    return asyncio.run(replay())


def test_relevant_important_facts_are_injected_at_floor_300(played: Replay) -> None:
    probe = played.data["probe"]
    injected = played.injections[probe["floor"]]
    assert injected.tokens <= BUDGET
    chosen = [played.repo.records[i] for i in injected.record_ids]
    injected_keys = {r.key: r.text for r in chosen if r.kind is MemoryKind.FACT}
    final = played.data["gold"]["final"]
    relevant = probe["relevant_keys"]
    hits = [k for k in relevant if injected_keys.get(k) == final[k]]
    assert len(hits) / len(relevant) >= 0.95, sorted(set(relevant) - set(hits))


def test_no_deprecated_or_superseded_fact_is_ever_injected(played: Replay) -> None:
    assert played.stale_injections == []
    final = played.data["gold"]["final"]
    for record_id in played.injections[300].record_ids:
        record = played.repo.records[record_id]
        if record.kind is MemoryKind.FACT:
            assert final.get(record.key) == record.text, record.key
    old_values = {
        v
        for k, values in played.data["gold"]["history"].items()
        for v in values
        if v != final.get(k)
    }
    assert old_values and not any(v in played.injections[300].text for v in old_values)


def test_exactly_one_active_fact_per_key_matching_gold(played: Replay) -> None:
    gold = played.data["gold"]
    assert played.max_active_per_key == 1
    live = visible_records(played.repo.records.values(), played.repo.relations, view(300))
    facts = Counter(r.key for r in live if r.kind is MemoryKind.FACT)
    assert set(facts) == set(gold["final"]) | {"intruder"} - {"intruder"} or set(facts) == set(
        gold["final"]
    )
    assert set(facts.values()) == {1}
    values = {r.key: r.text for r in live if r.kind is MemoryKind.FACT}
    assert values == gold["final"]
    for key in gold["deprecated_keys"]:
        assert key not in values
    # Every update and contradiction left an ``updates`` edge from the new value to the old.
    updates = [r for r in played.repo.relations if r.kind is RelationKind.UPDATES]
    events = gold["events"]
    assert len(updates) >= events["updates"] + events["contradictions"]
    assert any(r.kind is RelationKind.CONTRADICTS for r in played.repo.relations)


def test_open_loops_are_injected_while_open_and_never_after(played: Replay) -> None:
    resolved_at = {
        r.target_id: r.floor_no for r in played.repo.relations if r.kind is RelationKind.RESOLVES
    }
    loops = [r for r in played.repo.records.values() if r.kind is MemoryKind.OPEN_LOOP]
    assert len(loops) == 15 and len(resolved_at) == 10
    open_floors = shown = 0
    for loop in loops:
        end = resolved_at.get(loop.id, 301)
        for n in range(loop.created_floor + 1, 301):
            injected = loop.id in played.injections[n].record_ids
            if n <= end:
                open_floors += 1
                shown += injected
            else:
                assert not injected, (loop.id, n)
    assert shown / open_floors >= 0.95


def test_compacted_summaries_are_shorter_than_their_sources(played: Replay) -> None:
    for summary in played.repo.records.values():
        sources = [
            played.repo.records[r.target_id]
            for r in played.repo.relations
            if r.source_id == summary.id and r.kind is RelationKind.COMPACTS
        ]
        if sources and summary.tier == 2:
            assert summary.token_estimate <= 0.35 * sum(s.token_estimate for s in sources)


def test_token_cost_at_floor_300_is_bounded_by_floor_50(played: Replay) -> None:
    assert played.cost[300] <= 1.2 * played.cost[50], (played.cost[50], played.cost[300])


def test_compaction_provenance_and_bounded_summaries(played: Replay) -> None:
    records = played.repo.records
    compacted = {i for i, r in records.items() if r.lifecycle is Lifecycle.COMPACTED}
    links = Counter(r.target_id for r in played.repo.relations if r.kind is RelationKind.COMPACTS)
    assert compacted and set(links) == compacted and set(links.values()) == {1}
    derived = Counter(
        r.target_id for r in played.repo.relations if r.kind is RelationKind.DERIVED_FROM
    )
    assert set(derived) == compacted
    active = [
        r
        for r in records.values()
        if r.kind is MemoryKind.SUMMARY and r.lifecycle is Lifecycle.ACTIVE
    ]
    higher = sorted((r.coverage_start, r.coverage_end) for r in active if not r.is_micro)
    assert higher[0][0] == 1
    for (_, end), (start, _) in zip(higher, higher[1:], strict=False):
        assert start == end + 1
    micros = [r for r in active if r.is_micro]
    assert len(micros) <= 12 and min(m.coverage_start or 0 for m in micros) > higher[-1][1]


def test_broken_outputs_and_poison_are_contained(played: Replay) -> None:
    gold = played.data["gold"]
    assert played.agent_events["memory.agent_output_invalid"] == len(gold["broken_floors"])
    assert played.user_tag_items == 0
    assert "intruder" not in {r.key for r in played.repo.records.values()}
    for record in played.repo.records.values():
        for marker in (
            "<|im_start|>",
            "[INST]",
            "</summary>",
            "忽略以上所有指令",
            "\u200b",
            "Ignore all previous instructions",
            "[Memory Facts]",
        ):
            assert marker not in record.text, (record.id, marker)
    flagged = [r for r in played.repo.records.values() if "untrusted" in r.flags]
    assert flagged and all(r.confidence <= 0.5 for r in flagged)
    rendered = played.injections[300].text
    assert "<" not in rendered and ">" not in rendered


def test_replay_is_deterministic() -> None:
    first, second = asyncio.run(replay(60)), asyncio.run(replay(60))
    assert first.injections[60].text == second.injections[60].text
    assert first.repo.records == second.repo.records
    assert first.repo.relations == second.repo.relations
