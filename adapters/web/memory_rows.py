"""What the memory page shows, read through the engine's memory service: each record with its
tier, scope, importance, decay, coverage and lineage (what it compacts or updates, what
compacted or updated it), a search, the edits an admin makes, and the realm's memory jobs.

The page reaches memory only through :class:`engine.memory.service.MemoryService` (as the
``tavernbot memory`` command does), so a change here is the same change a command makes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from engine.errors import ConflictError, NotFoundError
from engine.memory.decay import decay_factor
from engine.memory.hand_edits import plan_edit
from engine.memory.jobs import JobState, JobStatus, JobType, revive
from engine.memory.lineage import Viewpoint
from engine.memory.records import (
    Lifecycle,
    MemoryRecord,
    MemoryRelation,
    tier_name,
)
from engine.memory.scoping import JobScope, viewpoint_for
from engine.memory.service import MemoryService
from engine.timeline.service import TimelineService
from engine.timeline.values import MAIN_BRANCH, Session

MAX_PAGE_RECORDS: Final = 500
"""Most records one memory page lists (newest first); a search narrows further."""
SEARCH_HITS: Final = 50
"""Most hits a search on the page shows."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LineageLink:
    """One relation seen from a record: ``direction`` is ``out`` (this record compacts or
    updates ``other``) or ``in`` (``other`` compacts or updates this record)."""

    kind: str
    direction: str
    other: str
    other_text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRow:
    """One record as the page shows it."""

    record: MemoryRecord
    kind: str
    tier: str
    decay: float
    coverage: str
    links: tuple[LineageLink, ...]
    score: float | None = None

    @property
    def lifecycle(self) -> str:
        """``active``, ``compacted`` or ``deprecated``."""
        return self.record.lifecycle.value


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRow:
    """One memory job of the realm, with whether an admin may revive it (a failed job waits
    to retry with its ``last_error``; a dead one is in the dead letter)."""

    key: str
    status: str
    attempts: int
    next_run_at: str
    last_error: str
    revivable: bool


async def session_view(timeline: TimelineService, session: Session, branch: str) -> Viewpoint:
    """The viewpoint of the head of ``branch`` (``main`` by default) of ``session``."""
    target = await timeline.branch(session.id, branch or MAIN_BRANCH)
    head = await timeline.head(target.id)
    branches = await timeline.branches(session.id)
    return viewpoint_for(session, target, branches, head)


def _coverage(record: MemoryRecord) -> str:
    if record.coverage_start is None:
        return ""
    if record.coverage_start == record.coverage_end:
        return f"floor {record.coverage_start}"
    return f"floors {record.coverage_start}-{record.coverage_end}"


def _links(
    record: MemoryRecord, relations: Sequence[MemoryRelation], texts: dict[str, str]
) -> tuple[LineageLink, ...]:
    links: list[LineageLink] = []
    for relation in relations:
        if relation.source_id == record.id:
            direction, other = "out", relation.target_id
        elif relation.target_id == record.id:
            direction, other = "in", relation.source_id
        else:
            continue
        links.append(
            LineageLink(
                kind=relation.kind.value,
                direction=direction,
                other=other,
                other_text=texts.get(other, ""),
            )
        )
    return tuple(links)


def rows_for(
    records: Sequence[MemoryRecord],
    relations: Sequence[MemoryRelation],
    *,
    memory: MemoryService,
    floor_no: int,
    now: datetime,
    scores: dict[str, float] | None = None,
) -> list[MemoryRow]:
    """Page rows for ``records``; ``relations`` give each its lineage."""
    texts = {r.id: r.display for r in records}
    rows = []
    for record in records:
        rows.append(
            MemoryRow(
                record=record,
                kind=record.kind.value,
                tier=tier_name(record.tier) if record.tier is not None else "",
                decay=decay_factor(
                    record, floor_no=floor_no, now=now, policy=memory.settings.decay
                ),
                coverage=_coverage(record),
                links=_links(record, relations, texts),
                score=None if scores is None else scores.get(record.id),
            )
        )
    return rows


STATES: Final = {"": None, "active": Lifecycle.ACTIVE, "forgotten": Lifecycle.DEPRECATED}
"""The page's record filters (``?state=``): all, active only, forgotten only."""


async def memory_rows(
    memory: MemoryService, view: Viewpoint, *, query: str = "", state: str = ""
) -> list[MemoryRow]:
    """The session's records (every lifecycle, newest first), or the search hits for
    ``query`` (best first), each with its lineage; ``state`` (a :data:`STATES` key) keeps
    only active or only forgotten ones."""
    now = memory.clock.now()
    scores: dict[str, float] | None = None
    if query.strip():
        hits = await memory.search(view, query, limit=SEARCH_HITS)
        records = [hit.record for hit in hits]
        scores = {hit.record.id: hit.score for hit in hits}
    else:
        records = await memory.list_records(
            view.realm_id, view.session_id, include_inactive=True, limit=MAX_PAGE_RECORDS
        )
        records.sort(key=lambda r: (-r.created_floor, r.id))
    wanted = STATES.get(state)
    if wanted is not None:
        records = [r for r in records if r.lifecycle is wanted]
    relations = await memory.repo.relations_for([r.id for r in records])
    # Lineage names the other side of each relation even when it is not on this page.
    missing = {x for rel in relations for x in (rel.source_id, rel.target_id)}
    missing -= {r.id for r in records}
    others = await memory.repo.get_records(sorted(missing)) if missing else []
    rows = rows_for(
        [*records, *others],
        relations,
        memory=memory,
        floor_no=view.floor_no,
        now=now,
        scores=scores,
    )
    return rows[: len(records)]


async def owned_record(memory: MemoryService, view: Viewpoint, record_id: str) -> MemoryRecord:
    """The record ``record_id`` when it belongs to this session or its realm (a global one);
    NotFoundError for any other id, so no other realm's memory is ever touched."""
    found = await memory.repo.get_records([record_id])
    record = found[0] if found else None
    if (
        record is None
        or record.realm_id != view.realm_id
        or record.session_id not in (None, view.session_id)
    ):
        raise NotFoundError(f"no memory {record_id!r} in this session")
    return record


async def forget_record(memory: MemoryService, view: Viewpoint, record_id: str) -> None:
    """Forget one of the session's memories on every branch (as ``/forget`` does)."""
    record = await owned_record(memory, view, record_id)
    await memory.forget(record.id, reason="forgotten from the web page")


async def revive_record(memory: MemoryService, view: Viewpoint, record_id: str) -> None:
    """Bring a forgotten memory of the session back (the memory service's ``revive``)."""
    record = await owned_record(memory, view, record_id)
    await memory.revive(record.id, view=view, reason="revived from the web page")


async def edit_record(
    memory: MemoryService, view: Viewpoint, record_id: str, text: str
) -> MemoryRecord:
    """Replace an active memory's text (:func:`engine.memory.hand_edits.plan_edit`): forks made
    before keep the old value."""
    record = await owned_record(memory, view, record_id)
    new, plan = plan_edit(
        record,
        text,
        view=view,
        new_id=memory.new_id(),
        now=memory.clock.now(),
        reason="edited from the web page",
    )
    await memory.recall.apply(memory.repo, plan)
    return new


def _in_realm(state: JobState, realm_id: str) -> bool:
    try:
        return JobScope.parse(state.scope_key).realm_id == realm_id
    except Exception:  # a malformed key belongs to nobody's page
        return False


async def job_rows(memory: MemoryService, realm_id: str) -> list[JobRow]:
    """The memory jobs of one realm; failed and dead-lettered ones first."""
    order = {JobStatus.DEAD_LETTER: 0, JobStatus.RETRY_WAITING: 1}
    states = [s for s in await memory.repo.list_jobs() if _in_realm(s, realm_id)]
    states.sort(key=lambda s: (order.get(s.status, 2), s.key))
    return [
        JobRow(
            key=s.key,
            status=s.status.value,
            attempts=s.attempts,
            next_run_at="" if s.next_run_at is None else s.next_run_at.isoformat(" ", "seconds"),
            last_error=s.last_error or "",
            revivable=s.status is JobStatus.DEAD_LETTER,
        )
        for s in states
    ]


async def revive_job(memory: MemoryService, realm_id: str, job: str) -> JobState:
    """Take a dead-lettered job of the realm out of the dead letter (as ``memory revive``)."""
    kind, _, scope_key = job.partition(":")
    try:
        job_type = JobType(kind)
    except ValueError:
        raise NotFoundError(f"no memory job {job!r}") from None
    state = await memory.repo.load_job(job_type, scope_key)
    if state is None or not _in_realm(state, realm_id):
        raise NotFoundError(f"no memory job {job!r}")
    revived = revive(state, now=memory.clock.now())
    if not await memory.repo.save_job(revived, expected_revision=state.revision):
        raise ConflictError(f"memory job {job!r} changed meanwhile; try again")
    return revived
