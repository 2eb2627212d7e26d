"""What a branch can see: scope rules plus the fork lineage.

A branch records its parent and the floor it forks after. A viewer on a fork sees the parent's
records written up to and including the fork floor (and, recursively, the grandparent's up to
the parent's fork floor), plus its own; nothing written later on the parent. Records that left
``active`` stay visible to a viewer whose lineage does not contain the point where they ended,
and a record is superseded for a viewer as soon as an ``updates``/``compacts``/``resolves``
relation from a record that viewer can see points at it.

Scope rules: ``global`` records are visible in their whole realm, with no lineage filter (like
global variables); ``chat`` and ``branch`` records must have been written on the viewer's
lineage (``branch`` also needs its scope branch on the lineage); ``floor`` records are visible
only on the floor they belong to.

Compacted records stay findable (issue 18): a record folded into a summary is no longer part
of the viewer's overview, but :func:`partition_visible` keeps it apart as ``compacted`` (in
scope, compacted for this viewer, superseded by nothing but ``compacts``), so the memory search
and relevance-led injection can still reach it. :func:`visible_records` is the overview's set
(the ``live`` part) and never includes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from engine.memory.errors import MemoryPolicyError
from engine.memory.records import (
    Lifecycle,
    MemoryRecord,
    MemoryRelation,
    MemoryScope,
    RelationKind,
    floor_scope_id,
)

_SUPERSEDING = frozenset({RelationKind.UPDATES, RelationKind.COMPACTS, RelationKind.RESOLVES})


@dataclass(frozen=True, slots=True, kw_only=True)
class LineageSegment:
    """One branch of a lineage and the last floor of it that is visible (None: all of it)."""

    branch_id: str
    until_floor: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Viewpoint:
    """Who is looking: realm, session, the current branch and floor, and the branch's lineage.

    ``lineage`` starts with the current branch (``until_floor`` None) and walks up through the
    parents, each with the floor the child forked after.
    """

    realm_id: str
    session_id: str
    branch_id: str
    floor_no: int
    lineage: tuple[LineageSegment, ...] = ()
    # The lineage's branch ids, computed once: every record's scope check reads them.
    _branch_ids: tuple[str, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.lineage:
            object.__setattr__(self, "lineage", (LineageSegment(branch_id=self.branch_id),))
        elif (
            self.lineage[0].branch_id != self.branch_id or self.lineage[0].until_floor is not None
        ):
            raise MemoryPolicyError(
                f"viewpoint lineage must start with the current branch {self.branch_id!r} "
                f"(no floor limit), got {self.lineage[0]}"
            )
        object.__setattr__(
            self, "_branch_ids", tuple(segment.branch_id for segment in self.lineage)
        )

    def sees_point(self, branch_id: str | None, floor_no: int | None) -> bool:
        """Whether a point on the timeline (branch, floor) lies on this viewer's lineage."""
        if branch_id is None:
            return True
        for segment in self.lineage:
            if segment.branch_id == branch_id:
                if segment.until_floor is None or floor_no is None:
                    return True
                return floor_no <= segment.until_floor
        return False

    @property
    def branch_ids(self) -> tuple[str, ...]:
        """The branches on the lineage, current first."""
        return self._branch_ids


def in_scope(record: MemoryRecord, view: Viewpoint) -> bool:
    """The scope rule plus the lineage rule for where ``record`` was written."""
    if record.realm_id != view.realm_id:
        return False
    if record.scope is MemoryScope.GLOBAL:
        return record.scope_id == view.realm_id
    if record.session_id != view.session_id:
        return False
    if record.scope is MemoryScope.FLOOR:
        return record.scope_id == floor_scope_id(view.branch_id, view.floor_no)
    if record.scope is MemoryScope.BRANCH and record.scope_id not in view.branch_ids:
        return False
    return view.sees_point(record.origin_branch, record.created_floor)


def live_for(record: MemoryRecord, view: Viewpoint) -> bool:
    """Whether the record is still active as far as this viewer knows (ignoring relations)."""
    if record.lifecycle is Lifecycle.ACTIVE:
        return True
    if record.ended_branch is None:
        return False  # ended with no known point: ended everywhere
    return not view.sees_point(record.ended_branch, record.ended_floor)


def visible_records(
    records: Iterable[MemoryRecord],
    relations: Iterable[MemoryRelation],
    view: Viewpoint,
) -> list[MemoryRecord]:
    """The records a viewer can use for every purpose: in scope, live, and not superseded by
    a visible record (the ``live`` part of :func:`partition_visible`; compacted records are
    left out). The result keeps the input order.
    """
    return list(partition_visible(records, relations, view).live)


@dataclass(frozen=True, slots=True, kw_only=True)
class VisibleRecords:
    """What a viewer can use, split by what it may be used for (each part in input order).

    ``live``: active for this viewer and superseded by nothing it sees; candidates for every
    section of the memory block. ``compacted``: folded into a summary (``compacts``) and
    nothing else: searchable and candidates for relevance-led selection, never for the overview
    sections (micro/macro summaries), which the summary that compacted them already holds.
    """

    live: tuple[MemoryRecord, ...]
    compacted: tuple[MemoryRecord, ...]

    @property
    def searchable(self) -> list[MemoryRecord]:
        """Live and compacted records together (live first)."""
        return [*self.live, *self.compacted]

    @property
    def compacted_ids(self) -> frozenset[str]:
        """The ids of the compacted part, to tell a candidate's part by id."""
        return frozenset(r.id for r in self.compacted)


def partition_visible(
    records: Iterable[MemoryRecord],
    relations: Iterable[MemoryRelation],
    view: Viewpoint,
) -> VisibleRecords:
    """The records in ``view``'s scope and lineage, split into ``live`` and ``compacted``.

    A record is compacted for the viewer when it left ``active`` as ``compacted`` at a point
    the viewer sees, or a ``compacts`` relation from a record the viewer sees points at it; an
    ``updates`` or ``resolves`` relation, or a deprecation, still hides it entirely.
    """
    in_view = [record for record in records if in_scope(record, view)]
    seen_ids = {record.id for record in in_view}
    compacted_by: set[str] = set()
    hidden: set[str] = set()
    for relation in relations:
        if relation.kind in _SUPERSEDING and relation.source_id in seen_ids:
            bucket = compacted_by if relation.kind is RelationKind.COMPACTS else hidden
            bucket.add(relation.target_id)
    live: list[MemoryRecord] = []
    compacted: list[MemoryRecord] = []
    for record in in_view:
        if record.id in hidden:
            continue
        if record.lifecycle is Lifecycle.ACTIVE or live_for(record, view):
            (compacted if record.id in compacted_by else live).append(record)
        elif record.lifecycle is Lifecycle.COMPACTED:
            compacted.append(record)
    return VisibleRecords(live=tuple(live), compacted=tuple(compacted))


def superseded_ids(
    relations: Sequence[MemoryRelation], visible_ids: Iterable[str]
) -> frozenset[str]:
    """Targets of superseding relations whose source is among ``visible_ids``."""
    sources = set(visible_ids)
    return frozenset(
        r.target_id for r in relations if r.kind in _SUPERSEDING and r.source_id in sources
    )


def scope_id_for(scope: MemoryScope, view: Viewpoint) -> str:
    """The scope id a new record written by this viewer gets for ``scope``."""
    if scope is MemoryScope.GLOBAL:
        return view.realm_id
    if scope is MemoryScope.CHAT:
        return view.session_id
    if scope is MemoryScope.BRANCH:
        return view.branch_id
    return floor_scope_id(view.branch_id, view.floor_no)
