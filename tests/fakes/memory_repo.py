"""An in-memory :class:`engine.memory.ports.MemoryRepository` for tests.

Behaves like the storage adapter must: ``apply_plan`` is all-or-nothing (a lifecycle change
that finds its record in another state aborts the whole plan), and ``save_job`` is a
compare-and-set on the job's revision.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from engine.errors import ConflictError
from engine.memory.errors import MemoryConflictError
from engine.memory.jobs import JobState, JobType
from engine.memory.plan import MutationPlan
from engine.memory.ports import MemoryQuery
from engine.memory.records import MemoryRecord, MemoryRelation, MemoryScope


class InMemoryMemoryRepository:
    """Records, relations and job states held in dicts."""

    def __init__(self) -> None:
        self.records: dict[str, MemoryRecord] = {}
        self.relations: list[MemoryRelation] = []
        self.jobs: dict[tuple[JobType, str], JobState] = {}
        self.applied_plans = 0

    async def add_records(self, records: Sequence[MemoryRecord]) -> None:
        for record in records:
            if record.id in self.records:
                raise ConflictError(f"memory record {record.id} already exists")
        for record in records:
            self.records[record.id] = record

    async def get_records(self, ids: Sequence[str]) -> list[MemoryRecord]:
        return [self.records[i] for i in ids if i in self.records]

    async def query_records(self, query: MemoryQuery) -> list[MemoryRecord]:
        found = [r for r in self.records.values() if _matches(r, query)]
        found.sort(key=lambda r: (r.created_floor, r.id))
        return found[: query.limit] if query.limit is not None else found

    async def relations_for(self, record_ids: Sequence[str]) -> list[MemoryRelation]:
        wanted = set(record_ids)
        return [r for r in self.relations if r.source_id in wanted or r.target_id in wanted]

    async def apply_plan(self, plan: MutationPlan) -> None:
        records = dict(self.records)
        for record in plan.new_records:
            if record.id in records:
                raise MemoryConflictError(f"memory record {record.id} already exists")
            records[record.id] = record
        for change in plan.changes:
            current = records.get(change.record_id)
            if current is None or current.lifecycle is not change.expected:
                state = "missing" if current is None else current.lifecycle.value
                raise MemoryConflictError(
                    f"memory record {change.record_id} is {state}, plan expected "
                    f"{change.expected.value}"
                )
            records[change.record_id] = replace(
                current,
                lifecycle=change.new,
                updated_at=change.at,
                ended_branch=change.ended_branch,
                ended_floor=change.ended_floor,
            )
        for relation in plan.relations:
            if relation.source_id not in records or relation.target_id not in records:
                raise MemoryConflictError(f"relation {relation} points at a missing record")
        purged = set(plan.purge_ids)
        for record_id in purged:
            records.pop(record_id, None)
        self.records = records
        self.relations = [
            r
            for r in [*self.relations, *plan.relations]
            if r.source_id not in purged and r.target_id not in purged
        ]
        self.applied_plans += 1

    async def mark_used(self, ids: Sequence[str], *, floor_no: int, at: datetime) -> None:
        for record_id in ids:
            if record_id in self.records:
                self.records[record_id] = replace(
                    self.records[record_id], last_used_floor=floor_no, last_used_at=at
                )

    async def load_job(self, job_type: JobType, scope_key: str) -> JobState | None:
        return self.jobs.get((job_type, scope_key))

    async def save_job(self, state: JobState, *, expected_revision: int | None) -> bool:
        current = self.jobs.get((state.job_type, state.scope_key))
        if (current.revision if current is not None else None) != expected_revision:
            return False
        self.jobs[(state.job_type, state.scope_key)] = copy.copy(state)
        return True

    async def list_jobs(self, job_type: JobType | None = None) -> list[JobState]:
        return [s for s in self.jobs.values() if job_type is None or s.job_type is job_type]


def _matches(record: MemoryRecord, query: MemoryQuery) -> bool:
    if record.realm_id != query.realm_id:
        return False
    session_bound = record.scope is not MemoryScope.GLOBAL
    if query.session_id is not None and session_bound and record.session_id != query.session_id:
        return False
    if query.kinds is not None and record.kind not in query.kinds:
        return False
    if query.lifecycles is not None and record.lifecycle not in query.lifecycles:
        return False
    if query.scopes is not None and (record.scope, record.scope_id) not in query.scopes:
        return False
    origin = record.origin_branch
    if query.branch_ids is not None and origin is not None and origin not in query.branch_ids:
        return False
    return query.key is None or record.key == query.key
