"""The MemoryRepository contract, run alike on the fake, SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta, timezone

import pytest

from engine.errors import ConflictError
from engine.memory.compaction import CompactionRequest, plan_compaction, run_compaction
from engine.memory.errors import MemoryConflictError
from engine.memory.jobs import JobPolicy, JobState, JobStatus, JobType, new_job
from engine.memory.plan import LifecycleChange, MutationPlan
from engine.memory.ports import MemoryQuery, MemoryRepository
from engine.memory.records import (
    Lifecycle,
    MemoryKind,
    MemoryRelation,
    MemoryScope,
    MemorySource,
    Provenance,
    RelationKind,
    SequentialIds,
)
from engine.memory.worker import JobOutcomeKind, ensure_job, run_job_once
from tests.test_memory.helpers import MAIN, REALM, SESSION, T0, record

PLUS_TWO = timezone(timedelta(hours=2))


def _relation(source: str, target: str, kind: RelationKind = RelationKind.UPDATES):
    return MemoryRelation(
        source_id=source, target_id=target, kind=kind, created_at=T0, floor_no=3, note="n"
    )


def _change(record_id: str, expected: Lifecycle, new: Lifecycle) -> LifecycleChange:
    return LifecycleChange(
        record_id=record_id,
        expected=expected,
        new=new,
        at=T0 + timedelta(hours=1),
        ended_branch=MAIN,
        ended_floor=7,
        reason="test",
    )


async def test_records_round_trip_every_field(repo: MemoryRepository) -> None:
    full = replace(
        record("f-1", "Mira: a ranger", key="mira", importance=0.8, floor=4),
        confidence=0.5,
        provenance=Provenance(
            source=MemorySource.AGENT, floor_no=4, message_ref="msg-4", job_id="job-1"
        ),
        created_at=T0.astimezone(PLUS_TWO),  # another offset: the same instant comes back
        last_used_at=T0 + timedelta(days=1),
        last_used_floor=9,
        ended_branch="b2",
        ended_floor=8,
        flags=("untrusted", "role_marker"),
        token_estimate=17,
    )
    summary = record("s-1", "They met.", kind=MemoryKind.SUMMARY, floor=2, tier=3)
    await repo.add_records([full, summary])
    got = await repo.get_records(["s-1", "missing", "f-1"])
    assert got == [summary, full]
    assert got[1].created_at == T0  # the same instant, whatever offset comes back


async def test_duplicate_ids_store_nothing(repo: MemoryRepository) -> None:
    await repo.add_records([record("a", "one")])
    with pytest.raises(ConflictError):
        await repo.add_records([record("b", "two"), record("a", "again")])
    assert await repo.get_records(["a", "b"]) == [record("a", "one")]


async def test_query_filters_and_order(repo: MemoryRepository) -> None:
    records = [
        record("r-10", "ten", floor=1, key="k"),
        record("r-2", "two", floor=1),
        record("g", "realm wide", scope=MemoryScope.GLOBAL, floor=0),
        record("loop", "who stole it?", kind=MemoryKind.OPEN_LOOP, floor=3),
        record("fork", "on a fork", floor=2, branch="fork-1", scope=MemoryScope.BRANCH),
        record("old", "gone", floor=1, lifecycle=Lifecycle.DEPRECATED),
        replace(record("other", "other session", floor=1), session_id="s-2", scope_id="s-2"),
        replace(record("alien", "another realm", floor=1), realm_id="realm-2"),
    ]
    await repo.add_records(records)

    async def ids(**kw) -> list[str]:
        return [r.id for r in await repo.query_records(MemoryQuery(realm_id=REALM, **kw))]

    assert await ids() == ["g", "other", "r-10", "r-2", "fork", "loop"]
    assert await ids(session_id=SESSION) == ["g", "r-10", "r-2", "fork", "loop"]
    assert await ids(session_id=SESSION, lifecycles=None) == [
        "g",
        "old",
        "r-10",
        "r-2",
        "fork",
        "loop",
    ]
    assert await ids(kinds=frozenset({MemoryKind.OPEN_LOOP})) == ["loop"]
    assert await ids(lifecycles=frozenset({Lifecycle.DEPRECATED})) == ["old"]
    assert await ids(scopes=frozenset({(MemoryScope.BRANCH, "fork-1")})) == ["fork"]
    assert await ids(scopes=frozenset()) == []
    assert await ids(session_id=SESSION, branch_ids=frozenset({MAIN})) == [
        "g",
        "r-10",
        "r-2",
        "loop",
    ]
    assert await ids(key="k") == ["r-10"]
    assert await ids(session_id=SESSION, limit=2) == ["g", "r-10"]


async def test_relations_and_mark_used(repo: MemoryRepository) -> None:
    await repo.add_records([record(i, i) for i in ("a", "b", "c")])
    plan = MutationPlan(
        relations=(_relation("b", "a"), _relation("c", "b", RelationKind.SUPPORTS))
    )
    await repo.apply_plan(plan)
    assert await repo.relations_for(["a"]) == [_relation("b", "a")]
    assert await repo.relations_for(["b"]) == list(plan.relations)
    assert await repo.relations_for([]) == []
    await repo.mark_used(["a", "zzz"], floor_no=12, at=T0 + timedelta(hours=3))
    (used,) = await repo.get_records(["a"])
    assert (used.last_used_floor, used.last_used_at) == (12, T0 + timedelta(hours=3))


async def test_apply_plan_inserts_changes_relates_and_purges(repo: MemoryRepository) -> None:
    await repo.add_records([record("old", "old value", key="k"), record("dead", "x")])
    await repo.apply_plan(MutationPlan(relations=(_relation("old", "dead"),)))
    plan = MutationPlan(
        new_records=(record("new", "new value", key="k", floor=7),),
        changes=(_change("old", Lifecycle.ACTIVE, Lifecycle.DEPRECATED),),
        relations=(_relation("new", "old"),),
        purge_ids=("dead",),
    )
    await repo.apply_plan(plan)
    old, new = await repo.get_records(["old", "new"])
    assert old.lifecycle is Lifecycle.DEPRECATED and new.lifecycle is Lifecycle.ACTIVE
    assert (old.ended_branch, old.ended_floor, old.updated_at) == (
        MAIN,
        7,
        T0 + timedelta(hours=1),
    )
    assert await repo.get_records(["dead"]) == []
    assert await repo.relations_for(["old", "dead"]) == [_relation("new", "old")]


@pytest.mark.parametrize("broken", ["stale_change", "missing_change", "dangling", "duplicate"])
async def test_a_failing_plan_leaves_nothing_behind(repo: MemoryRepository, broken: str) -> None:
    await repo.add_records([record("a", "a"), record("b", "b", lifecycle=Lifecycle.COMPACTED)])
    changes = [_change("a", Lifecycle.ACTIVE, Lifecycle.DEPRECATED)]
    relations = [_relation("n", "a")]
    new = [record("n", "new")]
    if broken == "stale_change":
        changes.append(_change("b", Lifecycle.ACTIVE, Lifecycle.DEPRECATED))
    elif broken == "missing_change":
        changes.append(_change("nope", Lifecycle.ACTIVE, Lifecycle.DEPRECATED))
    elif broken == "dangling":
        relations.append(_relation("n", "nope"))
    else:
        new.append(record("b", "clash"))
    plan = MutationPlan(new_records=tuple(new), changes=tuple(changes), relations=tuple(relations))
    with pytest.raises(MemoryConflictError):
        await repo.apply_plan(plan)
    assert [r.lifecycle for r in await repo.get_records(["a", "b"])] == [
        Lifecycle.ACTIVE,
        Lifecycle.COMPACTED,
    ]
    assert await repo.get_records(["n"]) == []
    assert await repo.relations_for(["a", "b"]) == []


async def test_jobs_compare_and_set(repo: MemoryRepository) -> None:
    job = new_job(JobType.COMPACT, "realm/session/branch:1", due_at=T0.astimezone(PLUS_TWO))
    assert await repo.load_job(JobType.COMPACT, job.scope_key) is None
    assert await repo.save_job(job, expected_revision=None)
    assert not await repo.save_job(job, expected_revision=None)  # already exists
    stored = await repo.load_job(JobType.COMPACT, job.scope_key)
    assert stored == job and stored.next_run_at == T0
    leased = replace(
        job,
        status=JobStatus.LEASED,
        revision=1,
        lease_owner="w1",
        leased_at=T0,
        lease_expires_at=T0 + timedelta(minutes=2),
        last_error="e" * 500,
    )
    assert not await repo.save_job(leased, expected_revision=5)
    assert await repo.save_job(leased, expected_revision=0)
    assert not await repo.save_job(leased, expected_revision=0)  # the loser of a race
    assert await repo.load_job(JobType.COMPACT, job.scope_key) == leased
    other = new_job(JobType.EXPIRY, REALM, due_at=T0)
    assert await repo.save_job(other, expected_revision=None)
    assert {j.key for j in await repo.list_jobs()} == {leased.key, other.key}
    assert await repo.list_jobs(JobType.EXPIRY) == [other]


async def test_racing_workers_run_a_job_exactly_once(repo: MemoryRepository) -> None:
    class Clock:
        def now(self):
            return T0

    calls: list[str | None] = []

    async def work(state: JobState) -> None:
        calls.append(state.lease_owner)

    await ensure_job(repo, JobType.DECAY, "k", due_at=T0)
    outcomes = await asyncio.gather(
        *(
            run_job_once(
                repo,
                job_type=JobType.DECAY,
                scope_key="k",
                owner=f"w{i}",
                clock=Clock(),
                policy=JobPolicy(),
                work=work,
            )
            for i in range(4)
        )
    )
    assert len(calls) == 1
    assert [o.kind for o in outcomes].count(JobOutcomeKind.RAN) == 1


async def test_a_compaction_applied_through_the_repository(repo: MemoryRepository) -> None:
    micros = [
        record(f"m{i}", f"Event {i}.", kind=MemoryKind.SUMMARY, floor=i) for i in range(1, 13)
    ]
    await repo.add_records(micros)

    async def summarise(request: CompactionRequest) -> str:
        return f"Floors {request.coverage_start}-{request.coverage_end}."

    stored = await repo.query_records(
        MemoryQuery(realm_id=REALM, kinds=frozenset({MemoryKind.SUMMARY}))
    )
    task = plan_compaction(stored, head_floor=12)
    assert task is not None
    plan = await run_compaction(
        task, summariser=summarise, now=T0, head_floor=12, new_id=SequentialIds("c")
    )
    await repo.apply_plan(plan)
    active = await repo.query_records(MemoryQuery(realm_id=REALM))
    assert [r.id for r in active] == ["c-1", "m9", "m10", "m11", "m12"]  # c-1 ends at floor 8
    links = await repo.relations_for(["c-1"])
    assert sorted((r.target_id, r.kind.value) for r in links) == sorted(
        (f"m{i}", kind) for i in range(1, 9) for kind in ("compacts", "derived_from")
    )


async def test_concurrent_plans_on_one_record_let_exactly_one_win(repo: MemoryRepository) -> None:
    await repo.add_records([record("a", "contested")])

    def plan(new_id: str) -> MutationPlan:
        return MutationPlan(
            new_records=(record(new_id, f"winner {new_id}"),),
            changes=(_change("a", Lifecycle.ACTIVE, Lifecycle.DEPRECATED),),
            relations=(_relation(new_id, "a"),),
        )

    results = await asyncio.gather(
        *(repo.apply_plan(plan(f"n{i}")) for i in range(3)), return_exceptions=True
    )
    assert sum(r is None for r in results) == 1
    assert all(isinstance(r, MemoryConflictError) for r in results if r is not None)
    winners = await repo.get_records(["n0", "n1", "n2"])
    assert len(winners) == 1
    assert await repo.relations_for(["a"]) == [_relation(winners[0].id, "a")]
