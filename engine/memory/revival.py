"""Reviving a forgotten memory: the inverse of :meth:`~engine.memory.service.MemoryService.forget`.

A deprecated record goes back to ``active`` (its end point cleared) only when the viewer may
see it: the same realm and session (or a global record of the realm) and written on the
viewer's lineage, as forget and the page's edit check. A record that an active record replaced
(an edit ``updates`` it, a summary ``compacts`` it) is refused: reviving it would put the old and
the new version in the prompt together, so the replacement is what to edit or forget.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from engine.errors import InvalidTransitionError, NotFoundError
from engine.memory.lineage import Viewpoint
from engine.memory.plan import LifecycleChange, MutationPlan, memory_event
from engine.memory.records import Lifecycle, MemoryRecord, MemoryRelation


def check_owned(record: MemoryRecord | None, view: Viewpoint, record_id: str) -> MemoryRecord:
    """``record`` when ``view`` may change it; NotFoundError otherwise, so another realm's or
    another session's memory is never touched (nor told apart from a missing one)."""
    if (
        record is None
        or record.realm_id != view.realm_id
        or record.session_id not in (None, view.session_id)
        or not view.sees_point(record.origin_branch, record.created_floor)
    ):
        raise NotFoundError(f"no memory {record_id!r} in this session")
    return record


def plan_revive(
    record: MemoryRecord,
    relations: Sequence[MemoryRelation],
    replacements: Sequence[MemoryRecord],
    *,
    now: datetime,
    reason: str = "revived",
) -> MutationPlan:
    """The plan bringing forgotten ``record`` back; ``relations`` are its relations and
    ``replacements`` the records on their other side (to find an active one replacing it)."""
    if record.lifecycle is not Lifecycle.DEPRECATED:
        raise InvalidTransitionError(
            f"memory {record.id!r} is {record.lifecycle.value}; only a forgotten one can be "
            "revived"
        )
    active = {r.id for r in replacements if r.lifecycle is Lifecycle.ACTIVE}
    for relation in relations:
        if relation.target_id == record.id and relation.source_id in active:
            raise InvalidTransitionError(
                f"memory {record.id!r} was replaced by {relation.source_id!r} "
                f"({relation.kind.value}); change that one instead"
            )
    change = LifecycleChange(
        record_id=record.id,
        expected=Lifecycle.DEPRECATED,
        new=Lifecycle.ACTIVE,
        at=now,
        ended_branch=None,
        ended_floor=None,
        reason=reason,
    )
    return MutationPlan(changes=(change,), events=(memory_event("revived", id=record.id),))
