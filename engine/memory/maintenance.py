"""Maintenance planning: expiry of old micro summaries and open loops, purge, and decay.

Expiry deprecates micro summaries older than ``micro_max_age`` (30 days) and open loops older
than ``open_loop_max_age`` (7 days). Macro and higher summaries are never expired or purged:
they are the story's long history. Deprecated records (other than those) are purged once
``purge_after`` passed since they were deprecated. Expiry is time-based, so it ends a record on
every branch (``ended_branch`` None).

Decay does not rewrite importance (ranking applies it at read time); the decay job forgets
facts and open loops whose decayed weight fell below ``forget_below``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from engine.memory.decay import DecayPolicy, decay_factor
from engine.memory.errors import MemoryPolicyError
from engine.memory.plan import LifecycleChange, MutationPlan, memory_event
from engine.memory.records import Lifecycle, MemoryKind, MemoryRecord

MICRO_MAX_AGE = timedelta(days=30)
OPEN_LOOP_MAX_AGE = timedelta(days=7)
PURGE_DEPRECATED_AFTER = timedelta(days=90)
FORGET_BELOW = 0.01
MAINTENANCE_BATCH = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpiryPolicy:
    """Ages after which records expire; None switches that rule off."""

    micro_max_age: timedelta | None = MICRO_MAX_AGE
    open_loop_max_age: timedelta | None = OPEN_LOOP_MAX_AGE
    purge_after: timedelta | None = PURGE_DEPRECATED_AFTER
    batch: int = MAINTENANCE_BATCH

    def __post_init__(self) -> None:
        for name in ("micro_max_age", "open_loop_max_age", "purge_after"):
            value: timedelta | None = getattr(self, name)
            if value is not None and value <= timedelta(0):
                raise MemoryPolicyError(f"expiry {name} must be positive or None")
        if self.batch < 1:
            raise MemoryPolicyError("expiry batch must be >= 1")


def _expire(record: MemoryRecord, now: datetime, reason: str) -> LifecycleChange:
    return LifecycleChange(
        record_id=record.id,
        expected=Lifecycle.ACTIVE,
        new=Lifecycle.DEPRECATED,
        at=now,
        ended_branch=None,
        ended_floor=None,
        reason=reason,
    )


def _is_long_summary(record: MemoryRecord) -> bool:
    return record.kind is MemoryKind.SUMMARY and not record.is_micro


def plan_expiry(
    records: Iterable[MemoryRecord], *, now: datetime, policy: ExpiryPolicy | None = None
) -> MutationPlan:
    """Deprecate expired micros and open loops; purge long-deprecated records (in a batch)."""
    policy = policy or ExpiryPolicy()
    changes: list[LifecycleChange] = []
    purge: list[str] = []
    for record in sorted(records, key=lambda r: (r.created_at, r.id)):
        if len(changes) + len(purge) >= policy.batch:
            break
        age = now - record.created_at
        if record.lifecycle is Lifecycle.ACTIVE:
            if (
                record.is_micro
                and policy.micro_max_age is not None
                and age >= policy.micro_max_age
            ):
                changes.append(_expire(record, now, "expired:micro_summary"))
            elif (
                record.kind is MemoryKind.OPEN_LOOP
                and policy.open_loop_max_age is not None
                and age >= policy.open_loop_max_age
            ):
                changes.append(_expire(record, now, "expired:open_loop"))
        elif (
            record.lifecycle is Lifecycle.DEPRECATED
            and policy.purge_after is not None
            and not _is_long_summary(record)
            and now - (record.updated_at or record.created_at) >= policy.purge_after
        ):
            purge.append(record.id)
    events = (memory_event("expired", deprecated=[c.record_id for c in changes], purged=purge),)
    return MutationPlan(
        changes=tuple(changes), purge_ids=tuple(purge), events=events if changes or purge else ()
    )


def plan_decay(
    records: Iterable[MemoryRecord],
    *,
    now: datetime,
    head_floor: int,
    policy: DecayPolicy | None = None,
    forget_below: float = FORGET_BELOW,
) -> MutationPlan:
    """Forget active facts and open loops of one branch whose decayed weight is negligible.

    ``head_floor`` is the branch's newest floor; run it once per branch.
    """
    policy = policy or DecayPolicy()
    changes = [
        _expire(record, now, "decayed")
        for record in records
        if record.lifecycle is Lifecycle.ACTIVE
        and record.kind in (MemoryKind.FACT, MemoryKind.OPEN_LOOP)
        and record.importance * decay_factor(record, floor_no=head_floor, now=now, policy=policy)
        < forget_below
    ]
    events = (memory_event("decayed", deprecated=[c.record_id for c in changes]),)
    return MutationPlan(changes=tuple(changes), events=events if changes else ())
