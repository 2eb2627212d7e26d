"""MemoryService on each repository: retrieval, the agent after a commit, broken agent output,
conflicts, forgetting, compaction with the offline summariser, and the job scopes."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from adapters.llm.offline import OfflineChatModel
from engine.errors import GenerationError
from engine.memory.compaction import CompactionRequest
from engine.memory.errors import MemoryConflictError, MemoryPolicyError
from engine.memory.jobs import JobStatus, JobType
from engine.memory.plan import MutationPlan
from engine.memory.ports import MemoryQuery, MemoryRepository
from engine.memory.records import Lifecycle, MemoryKind, MemoryScope, MemorySource
from engine.memory.scoping import JobScope, viewpoint_for
from engine.memory.service import MemorySettings
from engine.memory.summarisers import offline_summariser
from engine.timeline.values import Branch, Session, SessionSettings
from tests.fakes.memory_repo import InMemoryMemoryRepository
from tests.test_memory.helpers import MAIN, REALM, SESSION, T0, record, view
from tests.test_memory_storage.support import make_service

TAGS = ("Alice reached the harbour.",)


async def _all(repo: MemoryRepository):
    return await repo.query_records(MemoryQuery(realm_id=REALM, lifecycles=None))


async def _commit(service, floor: int = 3, tags=TAGS):
    return await service.after_commit(
        view(floor),
        user_text="We sail for the isle.",
        reply_text="Alice nods and unfurls the sails.",
        tag_summaries=tags,
        message_ref=f"msg-{floor}",
    )


async def test_valid_agent_ops_are_stored_with_events_and_jobs(repo: MemoryRepository) -> None:
    answer = json.dumps(
        {
            "turn_summary": "Alice set sail for the isle.",
            "facts_add": [{"key": "alice.ship", "value": "the Gull", "importance": 0.8}],
            "open_loops_add": [{"text": "What waits on the isle?"}],
        }
    )
    service, model, events, _ = make_service(repo, answers=[answer])
    outcome = await _commit(service)
    assert outcome.applied and not outcome.degraded
    stored = await _all(repo)
    assert sorted((r.kind.value, r.key, r.text) for r in stored) == [
        ("fact", "alice.ship", "the Gull"),
        ("open_loop", None, "What waits on the isle?"),
        ("summary", None, "Alice set sail for the isle."),
    ]
    assert all(r.provenance.message_ref == "msg-3" for r in stored)
    (request,) = model.requests
    assert request.model == "memory-model" and request.metadata["slot"] == "memory"
    assert "Alice reached the harbour." in request.messages[1].content  # tag hint
    assert events.names()[:2] == ["memory.agent_ops_planned", "memory.committed"]
    jobs = {(j.job_type, j.scope_key): j for j in await repo.list_jobs()}
    assert set(jobs) == {
        (JobType.COMPACT, f"{REALM}/{SESSION}/branch:{MAIN}"),
        (JobType.DECAY, f"{REALM}/{SESSION}/branch:{MAIN}"),
        (JobType.EXPIRY, REALM),
    }
    assert all(j.status is JobStatus.PENDING and j.next_run_at == T0 for j in jobs.values())


BROKEN = [
    "not json at all",
    '{"facts_add": [}',
    "[1, 2, 3]",
    json.dumps({"facts_update": [{"id": "F99", "value": "invented"}]}),
    json.dumps({"facts_deprecate": [{"id": "f-ship", "reason": "raw storage id"}]}),
    json.dumps({"facts_add": [{"key": "world.rule", "value": "x", "scope": "global"}]}),
    json.dumps({"facts_add": [{"key": "k", "value": "x", "scope": "galaxy"}]}),
    json.dumps({"open_loops_resolve": [{"id": "L7", "resolution": "made up"}]}),
    GenerationError("memory model unreachable", retryable=True),
]


@pytest.mark.parametrize("answer", BROKEN, ids=range(len(BROKEN)))
async def test_broken_agent_output_stores_nothing_invalid(
    repo: MemoryRepository, answer: str | Exception
) -> None:
    existing = record("f-ship", "the Gull", key="alice.ship", floor=1)
    await repo.add_records([existing])
    service, _, events, _ = make_service(repo, answers=[answer])
    outcome = await _commit(service)
    stored = await _all(repo)
    assert (await repo.get_records(["f-ship"])) == [existing]  # untouched
    new = [r for r in stored if r.id != "f-ship"]
    # Only the narrator's own tag summary may appear, as a micro summary of this floor.
    assert [(r.kind, r.tier, r.text, r.scope) for r in new] == [
        (MemoryKind.SUMMARY, 1, TAGS[0], MemoryScope.BRANCH)
    ]
    assert await repo.relations_for([r.id for r in stored]) == []
    assert outcome.applied
    names = events.names()
    if isinstance(answer, Exception):
        assert "memory.agent_failed" in names and outcome.degraded
    elif answer.startswith("{") and answer.endswith("}") and ":" in answer and "[}" not in answer:
        planned = events.named("memory.agent_ops_planned")[0].payload
        assert planned["rejected"] >= 1 and planned["diagnostics"]
    else:
        assert "memory.agent_output_invalid" in names and outcome.degraded
    assert "memory.committed" in names


async def test_without_a_model_the_tags_become_the_micro_summary(repo: MemoryRepository) -> None:
    service, model, events, _ = make_service(repo)
    service.model = None
    outcome = await _commit(service)
    (micro,) = await _all(repo)
    assert micro.is_micro and micro.provenance.source is MemorySource.EXTRACTION
    assert model.requests == [] and outcome.applied
    assert "memory.extracted" in events.names()
    assert (await _commit(service, floor=4, tags=())).plan.is_empty


class _Refusing(InMemoryMemoryRepository):
    """Refuses the first ``refusals`` plans, as a concurrent writer would make it."""

    def __init__(self, refusals: int) -> None:
        super().__init__()
        self.refusals = refusals

    async def apply_plan(self, plan: MutationPlan) -> None:
        if self.refusals:
            self.refusals -= 1
            raise MemoryConflictError("record changed meanwhile")
        await super().apply_plan(plan)


@pytest.mark.parametrize("refusals", [1, 2])
async def test_a_storage_conflict_degrades_and_never_raises(refusals: int) -> None:
    repo = _Refusing(refusals)
    answer = json.dumps({"facts_add": [{"key": "k", "value": "v"}], "turn_summary": "s"})
    service, _, events, _ = make_service(repo, answers=[answer])
    outcome = await _commit(service)
    assert outcome.degraded and len(events.named("memory.apply_failed")) == refusals
    texts = [r.text for r in repo.records.values()]
    assert texts == ([TAGS[0]] if refusals == 1 else [])
    assert outcome.applied is (refusals == 1)


async def test_retrieve_injects_within_budget_and_marks_use(repo: MemoryRepository) -> None:
    await repo.add_records(
        [
            record("f-ship", "Alice's ship is the Gull", key="alice.ship", importance=0.9),
            record("f-cat", "the cat sleeps", key="cat", importance=0.4),
            record("f-old", "gone", key="old", lifecycle=Lifecycle.DEPRECATED, importance=0.9),
        ]
    )
    service, _, events, clock = make_service(repo)
    clock.advance(hours=1)
    result = await service.retrieve(view(5), "Where is the Gull?", recent_turns=["hello"])
    assert "the Gull" in result.text and "f-old" not in result.record_ids
    assert result.record_ids[0] == "f-ship" and result.tokens <= 500
    (used,) = await repo.get_records(["f-ship"])
    assert (used.last_used_floor, used.last_used_at) == (5, clock.now())
    assert events.named("memory.injected")[0].payload["ids"] == list(result.record_ids)
    tiny = await service.retrieve(view(5), "Gull", budget=5)
    assert tiny.text == "" and tiny.record_ids == ()


async def test_search_list_and_forget(repo: MemoryRepository) -> None:
    await repo.add_records(
        [
            record("f-ship", "the Gull", key="alice.ship"),
            record("g-era", "age of sail", key="era", scope=MemoryScope.GLOBAL),
        ]
    )
    service, _, events, _ = make_service(repo)
    hits = await service.search(view(3), "gull")
    assert [h.record.id for h in hits] == ["f-ship"]
    assert await service.query_tool(view(3))("sail", 5) == ["era: age of sail"]
    listed = await service.list_records(REALM, SESSION)
    assert [r.id for r in listed] == ["f-ship", "g-era"]
    forgotten = await service.forget("f-ship")
    assert forgotten is not None and forgotten.lifecycle is Lifecycle.DEPRECATED
    assert "memory.forgotten" in events.names()
    (stored,) = await repo.get_records(["f-ship"])
    assert stored.lifecycle is Lifecycle.DEPRECATED and stored.ended_branch is None
    assert await service.forget("nope") is None
    assert [r.id for r in await service.list_records(REALM, SESSION)] == ["g-era"]
    everything = await service.list_records(REALM, SESSION, include_inactive=True)
    assert [r.id for r in everything] == ["f-ship", "g-era"]
    assert await service.search(view(3), "gull") == []


async def test_compaction_with_the_offline_summariser_is_deterministic(
    repo: MemoryRepository,
) -> None:
    micros = [
        record(f"s{i}", f"Floor {i} happened. Details.", kind=MemoryKind.SUMMARY, floor=i)
        for i in range(1, 13)
    ]
    micros = [replace(m, scope=MemoryScope.BRANCH, scope_id=MAIN) for m in micros]
    await repo.add_records(micros)
    service, _, events, _ = make_service(repo, summariser=offline_summariser)
    scope = JobScope(realm_id=REALM, session_id=SESSION, scope=MemoryScope.BRANCH, scope_id=MAIN)
    plans = await service.compact_now(scope)
    assert len(plans) == 1
    (macro,) = plans[0].new_records
    assert (
        macro.text == "Floors 1-8: " + ". ".join(f"Floor {i} happened" for i in range(1, 9)) + "."
    )
    assert events.named("memory.compacted")[0].payload["trigger"] == "count"
    assert await service.compact_now(scope) == []  # nothing due any more
    assert len(await service.compact_now(scope, force=True)) == 0  # 4 left: kept newest


async def test_summary_scopes_and_run_job_dispatch(repo: MemoryRepository) -> None:
    service, _, _, _ = make_service(repo)
    await _commit(service)
    (scope,) = await service.summary_scopes(REALM, SESSION)
    assert scope.key == f"{REALM}/{SESSION}/branch:{MAIN}"
    for state in await repo.list_jobs():
        await service.run_job(state, head_floor=3)  # nothing due: every body is a no-op
    with pytest.raises(MemoryPolicyError):
        await service.compact_now(JobScope(realm_id=REALM))
    with pytest.raises(MemoryPolicyError):
        await service.decay(scope.__class__(realm_id=REALM))


async def test_the_offline_provider_gives_a_deterministic_micro_summary() -> None:
    outcomes = []
    for _ in range(2):
        repo = InMemoryMemoryRepository()
        service, _, _, _ = make_service(repo, model=OfflineChatModel(announce=False))
        await _commit(service, tags=())
        outcomes.append([(r.id, r.text) for r in repo.records.values()])
    assert outcomes[0] == outcomes[1] and len(outcomes[0]) == 1
    assert outcomes[0][0][1].startswith("you said:")


def test_job_scope_keys_round_trip_and_refuse_garbage() -> None:
    for scope in (
        JobScope(realm_id="1"),
        JobScope(realm_id="1", session_id="2", scope=MemoryScope.BRANCH, scope_id="3"),
        JobScope(realm_id="1", scope=MemoryScope.GLOBAL, scope_id="1"),
        JobScope(realm_id="1", session_id="2", scope=MemoryScope.FLOOR, scope_id="3#4"),
    ):
        assert JobScope.parse(scope.key) == scope
    for bad in ("1/2", "1/2/branch", "1/2/galaxy:3"):
        with pytest.raises(MemoryPolicyError):
            JobScope.parse(bad)
    with pytest.raises(MemoryPolicyError):
        JobScope(realm_id="a/b")
    with pytest.raises(MemoryPolicyError):
        JobScope(realm_id="1", scope=MemoryScope.CHAT)


def test_viewpoint_for_follows_the_fork_lineage() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    session = Session(
        id=7, realm_id=3, platform="console", key="demo", settings=SessionSettings(), created_at=at
    )

    def branch(bid: int, parent: int | None, fork: int | None) -> Branch:
        return Branch(
            id=bid,
            session_id=7,
            name=f"b{bid}",
            parent_id=parent,
            fork_floor=fork,
            fork_page=None,
            created_at=at,
        )

    main, fork, grandchild = branch(1, None, None), branch(2, 1, 10), branch(3, 2, 14)
    here = viewpoint_for(session, grandchild, [main, fork, grandchild], 20)
    assert (here.realm_id, here.session_id, here.branch_id) == ("3", "7", "3")
    assert [(s.branch_id, s.until_floor) for s in here.lineage] == [
        ("3", None),
        ("2", 14),
        ("1", 10),
    ]
    assert viewpoint_for(session, main, [main], 1).lineage[0].branch_id == "1"


async def test_offline_summariser_respects_the_tier_budget() -> None:
    request = CompactionRequest(
        tier=2, texts=tuple(f"word{i} " * 50 for i in range(10)), coverage_start=1, coverage_end=9
    )
    text = await offline_summariser(request)
    assert len(text.split()) == 120 and text.startswith("Floors 1-9:")
    assert text == await offline_summariser(request)


def test_settings_limits_are_checked() -> None:
    with pytest.raises(MemoryPolicyError):
        MemorySettings(max_compactions_per_run=0)
    with pytest.raises(MemoryPolicyError):
        MemorySettings(agent_context_tokens=-1)
