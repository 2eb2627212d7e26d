"""The memory repository on SQL: :class:`engine.memory.ports.MemoryRepository` for SQLAlchemy.

Every method is one short transaction of its own on the storage's engine (the memory engine
calls the repository between model calls, never inside a turn's unit of work). ``apply_plan``
runs inside ONE transaction: a lifecycle change is an ``UPDATE ... WHERE lifecycle = expected``
whose row count must be 1, so a plan computed from stale data raises
:class:`~engine.memory.errors.MemoryConflictError` and leaves nothing behind. ``save_job`` is a
compare-and-set on ``memory_job.revision`` (an insert for a job that must not exist yet).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    and_,
    bindparam,
    delete,
    false,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.engine import Row
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from adapters.storage.database import begin_or_busy, lost_to_another
from adapters.storage.memory_models import STORY_DATE_LENGTH, MemoryRevisionRow
from adapters.storage.tables import JOB, RECORD, RELATION
from engine.errors import ConflictError
from engine.memory.errors import MemoryConflictError
from engine.memory.jobs import JobState, JobStatus, JobType
from engine.memory.plan import MutationPlan
from engine.memory.ports import MemoryQuery
from engine.memory.records import (
    Lifecycle,
    MemoryKind,
    MemoryRecord,
    MemoryRelation,
    MemoryScope,
    MemorySource,
    Provenance,
    RelationKind,
)

_REVISION = MemoryRevisionRow.__table__
# Statements every memory-on turn runs, built once (their compiled form is cached by
# SQLAlchemy; building and keying a new statement each turn cost as much as running it).
_REVISION_OF = select(_REVISION.c.revision).where(_REVISION.c.realm_id == bindparam("realm"))
_MARK_USED = (
    update(RECORD)
    .where(RECORD.c.id.in_(bindparam("ids", expanding=True)))
    .values(
        last_used_floor=bindparam("used_floor", type_=RECORD.c.last_used_floor.type),
        last_used_at=bindparam("used_at", type_=RECORD.c.last_used_at.type),
    )
)

IN_CHUNK = 500
"""Ids per ``IN (...)`` list: well under SQLite's and asyncpg's bound-parameter limits."""


def _utc(value: datetime | None) -> datetime | None:
    """Stored instants are UTC (SQLite keeps no offset, so convert before writing)."""
    return None if value is None else value.astimezone(UTC)


def _aware(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; everything stored is UTC."""
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _chunks(ids: Sequence[str]) -> list[list[str]]:
    unique = list(dict.fromkeys(ids))
    return [unique[i : i + IN_CHUNK] for i in range(0, len(unique), IN_CHUNK)]


def record_values(record: MemoryRecord) -> dict[str, Any]:
    """The row of a record (the provenance flattened)."""
    return {
        "id": record.id,
        "kind": record.kind.value,
        "scope": record.scope.value,
        "scope_id": record.scope_id,
        "realm_id": record.realm_id,
        "session_id": record.session_id,
        "origin_branch": record.origin_branch,
        "text": record.text,
        "provenance_source": record.provenance.source.value,
        "provenance_floor": record.provenance.floor_no,
        "provenance_message_ref": record.provenance.message_ref,
        "provenance_job_id": record.provenance.job_id,
        "created_at": _utc(record.created_at),
        "created_floor": record.created_floor,
        "key": record.key,
        "tier": record.tier,
        "importance": record.importance,
        "confidence": record.confidence,
        "lifecycle": record.lifecycle.value,
        "updated_at": _utc(record.updated_at),
        "last_used_at": _utc(record.last_used_at),
        "last_used_floor": record.last_used_floor,
        "coverage_start": record.coverage_start,
        "coverage_end": record.coverage_end,
        "ended_branch": record.ended_branch,
        "ended_floor": record.ended_floor,
        "token_estimate": record.token_estimate,
        "flags": list(record.flags),
        "story_date": None if record.story_date is None else record.story_date[:STORY_DATE_LENGTH],
    }


def record_of(row: Row[Any]) -> MemoryRecord:
    """The engine value of a ``memory_record`` row."""
    created_at = _aware(row.created_at)
    assert created_at is not None
    return MemoryRecord(
        id=row.id,
        kind=MemoryKind(row.kind),
        scope=MemoryScope(row.scope),
        scope_id=row.scope_id,
        realm_id=row.realm_id,
        session_id=row.session_id,
        origin_branch=row.origin_branch,
        text=row.text,
        provenance=Provenance(
            source=MemorySource(row.provenance_source),
            floor_no=row.provenance_floor,
            message_ref=row.provenance_message_ref,
            job_id=row.provenance_job_id,
        ),
        created_at=created_at,
        created_floor=row.created_floor,
        key=row.key,
        tier=row.tier,
        importance=row.importance,
        confidence=row.confidence,
        lifecycle=Lifecycle(row.lifecycle),
        updated_at=_aware(row.updated_at),
        last_used_at=_aware(row.last_used_at),
        last_used_floor=row.last_used_floor,
        coverage_start=row.coverage_start,
        coverage_end=row.coverage_end,
        ended_branch=row.ended_branch,
        ended_floor=row.ended_floor,
        token_estimate=row.token_estimate,
        flags=tuple(row.flags or ()),
        story_date=row.story_date,
    )


def relation_values(relation: MemoryRelation) -> dict[str, Any]:
    """The row of a relation."""
    return {
        "source_id": relation.source_id,
        "target_id": relation.target_id,
        "kind": relation.kind.value,
        "created_at": _utc(relation.created_at),
        "floor_no": relation.floor_no,
        "note": relation.note,
    }


def relation_of(row: Row[Any]) -> MemoryRelation:
    """The engine value of a ``memory_relation`` row."""
    created_at = _aware(row.created_at)
    assert created_at is not None
    return MemoryRelation(
        source_id=row.source_id,
        target_id=row.target_id,
        kind=RelationKind(row.kind),
        created_at=created_at,
        floor_no=row.floor_no,
        note=row.note,
    )


def job_values(state: JobState) -> dict[str, Any]:
    """The row of a job state."""
    return {
        "job_type": state.job_type.value,
        "scope_key": state.scope_key,
        "status": state.status.value,
        "revision": state.revision,
        "attempts": state.attempts,
        "next_run_at": _utc(state.next_run_at),
        "lease_owner": state.lease_owner,
        "leased_at": _utc(state.leased_at),
        "lease_expires_at": _utc(state.lease_expires_at),
        "takeovers": state.takeovers,
        "last_error": state.last_error,
        "last_success_at": _utc(state.last_success_at),
    }


def job_of(row: Row[Any]) -> JobState:
    """The engine value of a ``memory_job`` row."""
    return JobState(
        job_type=JobType(row.job_type),
        scope_key=row.scope_key,
        status=JobStatus(row.status),
        revision=row.revision,
        attempts=row.attempts,
        next_run_at=_aware(row.next_run_at),
        lease_owner=row.lease_owner,
        leased_at=_aware(row.leased_at),
        lease_expires_at=_aware(row.lease_expires_at),
        takeovers=row.takeovers,
        last_error=row.last_error,
        last_success_at=_aware(row.last_success_at),
    )


class SqlMemoryRepository:
    """:class:`engine.memory.ports.MemoryRepository` on one SQLAlchemy async engine.

    Pass the storage's engine (``SqlMemoryRepository(storage.engine)``); the repository opens
    a short transaction per call and never holds one between calls.
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        # PostgreSQL sorts text by the database's locale; "C" sorts by code point, like the
        # engine (and like SQLite's default), so both backends list records in the same order.
        self._id_order: ColumnElement[Any] = (
            RECORD.c.id.collate("C") if engine.dialect.name == "postgresql" else RECORD.c.id
        )

    def _begin(self) -> AbstractAsyncContextManager[AsyncConnection]:
        return begin_or_busy(self._engine, "memory storage")

    @asynccontextmanager
    async def _read_one(self) -> AsyncIterator[AsyncConnection]:
        """A connection for one SELECT: it rolls back on close instead of committing (less
        work per call, the same committed rows seen); busy is reported as ``_begin`` does."""
        try:
            async with self._engine.connect() as conn:
                yield conn
        except OperationalError as exc:
            if lost_to_another(exc):
                raise ConflictError(f"memory storage is busy, try again: {exc.orig}") from exc
            raise

    # ------------------------------------------------------------------ records

    async def add_records(self, records: Sequence[MemoryRecord]) -> None:
        """Insert new records; a duplicate id raises ``ConflictError`` (nothing is stored)."""
        if not records:
            return
        try:
            async with self._begin() as conn:
                await conn.execute(insert(RECORD), [record_values(r) for r in records])
        except IntegrityError as exc:
            raise ConflictError(f"memory record id already exists: {exc.orig}") from exc

    async def get_records(self, ids: Sequence[str]) -> list[MemoryRecord]:
        """The records with these ids that exist, in the order asked."""
        found: dict[str, MemoryRecord] = {}
        async with self._begin() as conn:
            for chunk in _chunks(ids):
                rows = await conn.execute(select(RECORD).where(RECORD.c.id.in_(chunk)))
                found.update((row.id, record_of(row)) for row in rows)
        return [found[i] for i in ids if i in found]

    async def query_records(self, query: MemoryQuery) -> list[MemoryRecord]:
        """Records matching ``query``, oldest ``created_floor`` first, then by id."""
        conditions: list[ColumnElement[bool]] = [RECORD.c.realm_id == query.realm_id]
        if query.session_id is not None:
            # Realm-wide records belong to no session and match every session of the realm.
            conditions.append(
                or_(
                    RECORD.c.scope == MemoryScope.GLOBAL.value,
                    RECORD.c.session_id == query.session_id,
                )
            )
        if query.kinds is not None:
            conditions.append(RECORD.c.kind.in_(sorted(k.value for k in query.kinds)))
        if query.lifecycles is not None:
            conditions.append(RECORD.c.lifecycle.in_(sorted(x.value for x in query.lifecycles)))
        if query.scopes is not None:
            pairs = [
                and_(RECORD.c.scope == scope.value, RECORD.c.scope_id == scope_id)
                for scope, scope_id in sorted(query.scopes)
            ]
            conditions.append(or_(*pairs) if pairs else false())
        if query.branch_ids is not None:
            conditions.append(
                or_(
                    RECORD.c.origin_branch.is_(None),
                    RECORD.c.origin_branch.in_(sorted(query.branch_ids)),
                )
            )
        if query.key is not None:
            conditions.append(RECORD.c.key == query.key)
        statement = (
            select(RECORD).where(*conditions).order_by(RECORD.c.created_floor, self._id_order)
        )
        if query.limit is not None:
            statement = statement.limit(max(0, query.limit))
        async with self._begin() as conn:
            rows = await conn.execute(statement)
            return [record_of(row) for row in rows]

    async def revision(self, realm_id: str) -> int | None:
        """The realm's memory revision (bumped by triggers on every change of its records or
        relations); None before anything was written, or on a database without them."""
        async with self._read_one() as conn:  # read on every turn: one SELECT, kept cheap
            found = await conn.execute(_REVISION_OF, {"realm": realm_id})
            value = found.scalar_one_or_none()
        return None if value is None else int(value)

    async def relations_for(self, record_ids: Sequence[str]) -> list[MemoryRelation]:
        """Every relation whose source or target is one of ``record_ids``, oldest first."""
        found: dict[int, MemoryRelation] = {}
        async with self._begin() as conn:
            for chunk in _chunks(record_ids):
                rows = await conn.execute(
                    select(RELATION).where(
                        or_(RELATION.c.source_id.in_(chunk), RELATION.c.target_id.in_(chunk))
                    )
                )
                found.update((row.id, relation_of(row)) for row in rows)
        return [found[key] for key in sorted(found)]

    async def apply_plan(self, plan: MutationPlan) -> None:
        """Apply ``plan`` in one transaction; any mismatch raises ``MemoryConflictError``."""
        if plan.is_empty:
            return
        try:
            async with self._begin() as conn:
                await self._apply(conn, plan)
        except IntegrityError as exc:
            raise MemoryConflictError(
                f"memory plan refused by storage (duplicate id or missing record): {exc.orig}"
            ) from exc

    async def _apply(self, conn: AsyncConnection, plan: MutationPlan) -> None:
        if plan.new_records:
            await conn.execute(insert(RECORD), [record_values(r) for r in plan.new_records])
        for change in plan.changes:
            result = await conn.execute(
                update(RECORD)
                .where(RECORD.c.id == change.record_id)
                .where(RECORD.c.lifecycle == change.expected.value)
                .values(
                    lifecycle=change.new.value,
                    updated_at=_utc(change.at),
                    ended_branch=change.ended_branch,
                    ended_floor=change.ended_floor,
                )
            )
            if result.rowcount != 1:
                found = await conn.execute(
                    select(RECORD.c.lifecycle).where(RECORD.c.id == change.record_id)
                )
                state = found.scalar_one_or_none() or "missing"
                # Raising inside the transaction rolls back everything done so far.
                raise MemoryConflictError(
                    f"memory record {change.record_id} is {state}, plan expected "
                    f"{change.expected.value}"
                )
        if plan.relations:
            # Foreign keys refuse a relation to a missing record (IntegrityError above).
            await conn.execute(insert(RELATION), [relation_values(r) for r in plan.relations])
        for chunk in _chunks(plan.purge_ids):
            await conn.execute(
                delete(RELATION).where(
                    or_(RELATION.c.source_id.in_(chunk), RELATION.c.target_id.in_(chunk))
                )
            )
            await conn.execute(delete(RECORD).where(RECORD.c.id.in_(chunk)))

    async def mark_used(self, ids: Sequence[str], *, floor_no: int, at: datetime) -> None:
        """Record that these records were injected at ``floor_no``."""
        async with self._begin() as conn:
            for chunk in _chunks(ids):
                await conn.execute(
                    _MARK_USED, {"ids": chunk, "used_floor": floor_no, "used_at": _utc(at)}
                )

    # ------------------------------------------------------------------ jobs

    async def load_job(self, job_type: JobType, scope_key: str) -> JobState | None:
        """The job's state, or None if it never ran."""
        async with self._begin() as conn:
            row = (
                await conn.execute(
                    select(JOB).where(
                        JOB.c.job_type == job_type.value, JOB.c.scope_key == scope_key
                    )
                )
            ).first()
        return None if row is None else job_of(row)

    async def save_job(self, state: JobState, *, expected_revision: int | None) -> bool:
        """Compare-and-set on the revision (None: only if no state exists yet)."""
        values = job_values(state)
        if expected_revision is None:
            try:
                async with self._begin() as conn:
                    await conn.execute(insert(JOB).values(**values))
            except IntegrityError:
                return False  # another instance created it first
            return True
        async with self._begin() as conn:
            result = await conn.execute(
                update(JOB)
                .where(JOB.c.job_type == state.job_type.value)
                .where(JOB.c.scope_key == state.scope_key)
                .where(JOB.c.revision == expected_revision)
                .values(**values)
            )
            return result.rowcount == 1

    async def list_jobs(self, job_type: JobType | None = None) -> list[JobState]:
        """All job states (of one type), by type and scope."""
        statement = select(JOB).order_by(JOB.c.job_type, JOB.c.scope_key)
        if job_type is not None:
            statement = statement.where(JOB.c.job_type == job_type.value)
        async with self._begin() as conn:
            return [job_of(row) for row in await conn.execute(statement)]
