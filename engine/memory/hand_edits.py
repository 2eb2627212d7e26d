"""Editing a memory by hand (the web page's memory tab): the old record is not changed, a new
manual record ``updates`` it and the old one ends at the viewer's floor, so forks made before
keep the old text.

Forgetting is :meth:`~engine.memory.service.MemoryService.forget` and reviving
:mod:`engine.memory.revival`; this module only plans, the caller applies the plan.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Final

from engine.errors import FormatError, InvalidTransitionError, LimitExceededError
from engine.memory.lineage import Viewpoint
from engine.memory.plan import LifecycleChange, MutationPlan
from engine.memory.records import (
    Lifecycle,
    MemoryRecord,
    MemoryRelation,
    MemorySource,
    Provenance,
    RelationKind,
    estimate_tokens,
)
from engine.memory.units import unit_text

MAX_EDIT_CHARS: Final = 4000
"""Longest text a memory may be given by hand."""


def plan_edit(
    record: MemoryRecord,
    text: str,
    *,
    view: Viewpoint,
    new_id: str,
    now: datetime,
    reason: str = "edited by hand",
) -> tuple[MemoryRecord, MutationPlan]:
    """The new record replacing active ``record`` with ``text``, and the plan that stores it.

    One line of text is stored with its spaces collapsed; several lines are kept as lines (each
    a unit of its own). Empty text, text over :data:`MAX_EDIT_CHARS` and a record that is not
    active are refused in one line."""
    clean = " ".join(text.split()) if "\n" not in text else text.strip()
    if not clean:
        raise FormatError("a memory needs some text", field="text")
    if len(clean) > MAX_EDIT_CHARS:
        raise LimitExceededError(
            f"a memory is at most MAX_EDIT_CHARS={MAX_EDIT_CHARS} characters",
            limit="MAX_EDIT_CHARS",
            value=MAX_EDIT_CHARS,
        )
    if record.lifecycle is not Lifecycle.ACTIVE:
        raise InvalidTransitionError(
            f"memory {record.id!r} is {record.lifecycle.value}; only an active one can be edited"
        )
    stored = unit_text(clean)
    new = replace(
        record,
        id=new_id,
        text=stored,
        provenance=Provenance(source=MemorySource.MANUAL, floor_no=view.floor_no),
        created_at=now,
        updated_at=now,
        created_floor=max(record.created_floor, view.floor_no),
        last_used_at=None,
        last_used_floor=None,
        token_estimate=estimate_tokens(stored),
        flags=(),
    )
    plan = MutationPlan(
        new_records=(new,),
        changes=(
            LifecycleChange(
                record_id=record.id,
                expected=Lifecycle.ACTIVE,
                new=Lifecycle.DEPRECATED,
                at=now,
                ended_branch=view.branch_id,
                ended_floor=view.floor_no,
                reason=reason,
            ),
        ),
        relations=(
            MemoryRelation(
                source_id=new.id,
                target_id=record.id,
                kind=RelationKind.UPDATES,
                created_at=now,
                floor_no=view.floor_no,
                note=reason,
            ),
        ),
    )
    return new, plan
