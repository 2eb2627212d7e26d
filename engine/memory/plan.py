"""A plan of memory mutations: what the caller applies in one transaction.

Planners never write; they return a :class:`MutationPlan`. The repository applies it
atomically (:meth:`engine.memory.ports.MemoryRepository.apply_plan`), checking each lifecycle
change's ``expected`` state so that a plan computed from stale data fails as a whole instead of
half-applying. ``events`` are emitted by the caller after the commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.memory.records import Lifecycle, MemoryRecord, MemoryRelation
from engine.ports import Event


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnostic:
    """Something a planner refused or repaired: a stable ``code``, a message and where."""

    code: str
    message: str
    where: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class LifecycleChange:
    """Move a stored record from ``expected`` to ``new``, noting where on the timeline."""

    record_id: str
    expected: Lifecycle
    new: Lifecycle
    at: datetime
    ended_branch: str | None
    ended_floor: int | None
    reason: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class MutationPlan:
    """New records, lifecycle changes and relations to apply together, plus what happened."""

    new_records: tuple[MemoryRecord, ...] = ()
    changes: tuple[LifecycleChange, ...] = ()
    relations: tuple[MemoryRelation, ...] = ()
    purge_ids: tuple[str, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    events: tuple[Event, ...] = field(default_factory=tuple)

    @property
    def is_empty(self) -> bool:
        """Whether applying the plan would change nothing in storage."""
        return not (self.new_records or self.changes or self.relations or self.purge_ids)

    def merged(self, other: MutationPlan) -> MutationPlan:
        """This plan followed by ``other``."""
        return MutationPlan(
            new_records=self.new_records + other.new_records,
            changes=self.changes + other.changes,
            relations=self.relations + other.relations,
            purge_ids=self.purge_ids + other.purge_ids,
            diagnostics=self.diagnostics + other.diagnostics,
            events=self.events + other.events,
        )


def memory_event(name: str, **payload: Any) -> Event:
    """An event in the ``memory.*`` family."""
    return Event(name=f"memory.{name}", payload=payload)


def diagnostics_payload(diagnostics: tuple[Diagnostic, ...]) -> list[dict[str, str]]:
    """Diagnostics as plain data for an event payload."""
    return [{"code": d.code, "message": d.message, "where": d.where} for d in diagnostics]


def committed_event(plan: MutationPlan, *, floor_no: int | None = None) -> Event:
    """``memory.committed`` (seed section 10): emitted by the caller once the plan is stored."""
    return memory_event(
        "committed",
        floor_no=floor_no,
        added=[r.id for r in plan.new_records],
        changed=[{"id": c.record_id, "to": c.new.value, "reason": c.reason} for c in plan.changes],
        relations=[[r.source_id, r.kind.value, r.target_id] for r in plan.relations],
        purged=list(plan.purge_ids),
    )
