"""Where memory jobs and viewers stand: job scope keys, and viewpoints from timeline values.

A memory job's ``scope_key`` names what it works on (:class:`JobScope`): expiry runs per realm,
compaction per summary scope, decay per branch. Memory keeps the timeline's realm, session and
branch ids as text; :func:`viewpoint_for` converts them and builds a fork's lineage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.memory.errors import MemoryPolicyError
from engine.memory.lineage import LineageSegment, Viewpoint
from engine.memory.records import MemoryScope
from engine.timeline.values import Branch, Session

_SEPARATOR = "/"


@dataclass(frozen=True, slots=True, kw_only=True)
class JobScope:
    """What a memory job works on; its :attr:`key` is the job's ``scope_key``.

    Expiry is per realm (only ``realm_id``); compaction is per summary scope and decay per
    branch (``scope`` and ``scope_id`` set, with the session of the scope).
    """

    realm_id: str
    session_id: str | None = None
    scope: MemoryScope | None = None
    scope_id: str | None = None

    def __post_init__(self) -> None:
        for name, value in (("realm_id", self.realm_id), ("session_id", self.session_id or "")):
            if _SEPARATOR in value:
                raise MemoryPolicyError(f"job scope {name} {value!r} contains {_SEPARATOR!r}")
        if (self.scope is None) != (self.scope_id is None):
            raise MemoryPolicyError("job scope needs both scope and scope_id, or neither")

    @property
    def key(self) -> str:
        """``realm`` or ``realm/session/scope:scope_id``."""
        if self.scope is None:
            return self.realm_id
        return f"{self.realm_id}/{self.session_id or ''}/{self.scope.value}:{self.scope_id}"

    @classmethod
    def parse(cls, key: str) -> JobScope:
        """The scope behind a job's ``scope_key``; MemoryPolicyError when malformed."""
        parts = key.split(_SEPARATOR, 2)
        if len(parts) == 1:
            return cls(realm_id=key)
        if len(parts) != 3 or ":" not in parts[2]:
            raise MemoryPolicyError(f"memory job scope key {key!r} is malformed")
        scope_name, scope_id = parts[2].split(":", 1)
        try:
            scope = MemoryScope(scope_name)
        except ValueError as exc:
            raise MemoryPolicyError(
                f"memory job scope key {key!r}: no scope {scope_name!r}"
            ) from exc
        return cls(realm_id=parts[0], session_id=parts[1] or None, scope=scope, scope_id=scope_id)


def viewpoint_for(
    session: Session, branch: Branch, branches: Sequence[Branch], floor_no: int
) -> Viewpoint:
    """The memory viewpoint of ``branch`` at ``floor_no``: ids as text, and the fork lineage
    (each parent visible up to the floor its child forked after). ``branches`` holds the
    session's branches (``TimelineService.branches``)."""
    by_id = {b.id: b for b in branches}
    segments = [LineageSegment(branch_id=str(branch.id))]
    child, seen = branch, {branch.id}
    limit: int | None = None
    while child.parent_id is not None and child.parent_id in by_id:
        parent = by_id[child.parent_id]
        if parent.id in seen:  # a broken parent chain must not loop forever
            break
        seen.add(parent.id)
        fork = child.fork_floor if child.fork_floor is not None else 0
        limit = fork if limit is None else min(limit, fork)
        segments.append(LineageSegment(branch_id=str(parent.id), until_floor=limit))
        child = parent
    return Viewpoint(
        realm_id=str(session.realm_id),
        session_id=str(session.id),
        branch_id=str(branch.id),
        floor_no=floor_no,
        lineage=tuple(segments),
    )
