"""Turning validated agent ops (or extracted summary tags) into a :class:`MutationPlan`.

Every written text goes through :func:`engine.memory.sanitize.neutralize`; flagged text is
kept but marked ``untrusted`` with its confidence halved. It is then stored as retrievable
units (:func:`engine.memory.units.unit_text`: one per line, long lines split at sentence ends),
so injection can take a fact or an observation whole without cutting a record. A fact update
writes a new record that ``updates`` the old one (the old one is deprecated), so forks made
earlier keep the old value. After the ops, the same-key resolver leaves one active fact per
key. Output that is not a JSON object degrades to a micro summary (from the narrator's tags,
else the raw text) plus a ``memory.agent_output_invalid`` event; it never raises.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from engine.memory.agent_context import AgentContext
from engine.memory.agent_ops import AgentLimits, ValidatedOps, validate_agent_ops
from engine.memory.conflicts import bucket_of, resolve_key_conflicts
from engine.memory.lineage import Viewpoint, scope_id_for, visible_records
from engine.memory.plan import (
    Diagnostic,
    LifecycleChange,
    MutationPlan,
    diagnostics_payload,
    memory_event,
)
from engine.memory.records import (
    MICRO_TIER,
    IdFactory,
    Lifecycle,
    MemoryKind,
    MemoryRecord,
    MemoryRelation,
    MemoryScope,
    MemorySource,
    Provenance,
    RelationKind,
    estimate_tokens,
)
from engine.memory.sanitize import neutralize
from engine.memory.units import unit_text
from engine.ports import Event

FACT_IMPORTANCE = 0.5
MICRO_IMPORTANCE = 0.6
OPEN_LOOP_IMPORTANCE = 0.6
TAG_SUMMARY_IMPORTANCE = 0.5
UNTRUSTED_CONFIDENCE_FACTOR = 0.5
MAX_FALLBACK_MICRO_CHARS = 1000
DEFAULT_AGENT_SCOPES = frozenset({MemoryScope.CHAT, MemoryScope.BRANCH, MemoryScope.FLOOR})


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentTurn:
    """Where and when the ops apply, and what the preset allows the agent to write."""

    view: Viewpoint
    now: datetime
    allowed_scopes: frozenset[MemoryScope] = DEFAULT_AGENT_SCOPES
    default_fact_scope: MemoryScope = MemoryScope.CHAT
    default_loop_scope: MemoryScope = MemoryScope.CHAT
    summary_scope: MemoryScope = MemoryScope.BRANCH
    message_ref: str | None = None
    job_id: str | None = None
    tag_summaries: tuple[str, ...] = ()


class _Builder:
    def __init__(self, turn: AgentTurn, new_id: IdFactory) -> None:
        self.turn = turn
        self.new_id = new_id
        self.records: list[MemoryRecord] = []
        self.changes: list[LifecycleChange] = []
        self.relations: list[MemoryRelation] = []
        self.notes: list[Diagnostic] = []

    def record(
        self,
        *,
        kind: MemoryKind,
        scope: MemoryScope,
        text: str,
        source: MemorySource,
        importance: float,
        confidence: float = 1.0,
        key: str | None = None,
        tier: int | None = None,
        where: str = "",
    ) -> MemoryRecord:
        view, now = self.turn.view, self.turn.now
        clean = neutralize(text)
        stored = unit_text(clean.text)
        flags: tuple[str, ...] = ()
        if clean.flagged:
            flags = ("untrusted", *clean.reasons)
            confidence *= UNTRUSTED_CONFIDENCE_FACTOR
            self.notes.append(
                Diagnostic(
                    code="sanitized",
                    where=where,
                    message=f"instruction-like text neutralised: {clean.reasons}",
                )
            )
        record = MemoryRecord(
            id=self.new_id(),
            kind=kind,
            scope=scope,
            scope_id=scope_id_for(scope, view),
            realm_id=view.realm_id,
            session_id=None if scope is MemoryScope.GLOBAL else view.session_id,
            origin_branch=None if scope is MemoryScope.GLOBAL else view.branch_id,
            text=stored,
            key=key,
            tier=tier,
            importance=importance,
            confidence=confidence,
            provenance=Provenance(
                source=source,
                floor_no=view.floor_no,
                message_ref=self.turn.message_ref,
                job_id=self.turn.job_id,
            ),
            created_at=now,
            updated_at=now,
            created_floor=view.floor_no,
            coverage_start=view.floor_no if kind is MemoryKind.SUMMARY else None,
            coverage_end=view.floor_no if kind is MemoryKind.SUMMARY else None,
            token_estimate=estimate_tokens(stored),
            flags=flags,
        )
        self.records.append(record)
        return record

    def end(self, record: MemoryRecord, reason: str) -> None:
        if record.lifecycle is not Lifecycle.ACTIVE:
            return  # ended elsewhere on the timeline; the relation alone supersedes it here
        self.changes.append(
            LifecycleChange(
                record_id=record.id,
                expected=Lifecycle.ACTIVE,
                new=Lifecycle.DEPRECATED,
                at=self.turn.now,
                ended_branch=self.turn.view.branch_id,
                ended_floor=self.turn.view.floor_no,
                reason=reason,
            )
        )

    def relate(self, source: str, target: str, kind: RelationKind, note: str = "") -> None:
        self.relations.append(
            MemoryRelation(
                source_id=source,
                target_id=target,
                kind=kind,
                created_at=self.turn.now,
                floor_no=self.turn.view.floor_no,
                note=note,
            )
        )

    def plan(self, events: Sequence[Event] = ()) -> MutationPlan:
        return MutationPlan(
            new_records=tuple(self.records),
            changes=tuple(self.changes),
            relations=tuple(self.relations),
            diagnostics=tuple(self.notes),
            events=tuple(events),
        )


def plan_agent_turn(
    raw: str,
    *,
    context: AgentContext,
    records: Iterable[MemoryRecord],
    relations: Iterable[MemoryRelation],
    turn: AgentTurn,
    new_id: IdFactory,
    limits: AgentLimits | None = None,
) -> MutationPlan:
    """Validate the agent's raw output and plan its mutations for ``turn``.

    ``records``/``relations`` are the stored ones the viewer's lineage holds (the same set the
    context was built from); they are needed to keep one active fact per key.
    """
    ops = validate_agent_ops(
        raw, context=context, allowed_scopes=turn.allowed_scopes, limits=limits
    )
    builder = _Builder(turn, new_id)
    builder.notes.extend(ops.diagnostics)
    if not ops.parsed:
        return _degraded(builder, raw, ops)
    return _apply_ops(builder, ops, list(records), list(relations))


def _degraded(builder: _Builder, raw: str, ops: ValidatedOps) -> MutationPlan:
    turn = builder.turn
    if turn.tag_summaries:
        text, source = "\n".join(turn.tag_summaries), MemorySource.EXTRACTION
    else:
        text, source = raw.strip()[:MAX_FALLBACK_MICRO_CHARS], MemorySource.AGENT
    if text.strip():
        builder.record(
            kind=MemoryKind.SUMMARY,
            scope=turn.summary_scope,
            text=text,
            source=source,
            importance=MICRO_IMPORTANCE,
            tier=MICRO_TIER,
            where="fallback",
        )
    event = memory_event(
        "agent_output_invalid",
        floor_no=turn.view.floor_no,
        diagnostics=diagnostics_payload(ops.diagnostics),
    )
    return builder.plan([event])


def _apply_ops(
    builder: _Builder,
    ops: ValidatedOps,
    records: list[MemoryRecord],
    relations: list[MemoryRelation],
) -> MutationPlan:
    turn = builder.turn
    visible = list(visible_records(records, relations, turn.view))
    micro: MemoryRecord | None = None
    summary = ops.turn_summary or "\n".join(turn.tag_summaries)
    if not summary and ops.loops_resolve:
        summary = "; ".join(
            f"Resolved: {op.record.text} ({op.resolution})" for op in ops.loops_resolve
        )
    if summary:
        source = MemorySource.AGENT if ops.turn_summary else MemorySource.EXTRACTION
        micro = builder.record(
            kind=MemoryKind.SUMMARY,
            scope=turn.summary_scope,
            text=summary,
            source=source,
            importance=MICRO_IMPORTANCE,
            tier=MICRO_TIER,
            where="turn_summary",
        )
    explicit: set[tuple[str, str]] = set()
    updated_keys: set[tuple[MemoryScope, str, str]] = set()
    for op in ops.facts_update:
        old = op.record
        importance = old.importance if op.importance is None else op.importance
        if unit_text(op.value) == unit_text(old.text) and importance == old.importance:
            builder.notes.append(
                Diagnostic(
                    code="unchanged", where=old.id, message="update repeats the stored value"
                )
            )
            continue
        new = builder.record(
            kind=MemoryKind.FACT,
            scope=old.scope,
            text=op.value,
            key=old.key,
            source=MemorySource.AGENT,
            importance=importance,
            confidence=old.confidence,
            where=f"facts_update {old.id}",
        )
        builder.end(old, "updated")
        builder.relate(new.id, old.id, RelationKind.UPDATES, "facts_update")
        explicit.add((new.id, old.id))
        bucket = bucket_of(old)
        if bucket is not None:
            updated_keys.add(bucket)
    for dep in ops.facts_deprecate:
        builder.end(dep.record, f"deprecated: {dep.reason}")
    live_keys = {bucket_of(r): r for r in visible if r.kind is MemoryKind.FACT}
    for add in ops.facts_add:
        scope = add.scope or turn.default_fact_scope
        bucket = (scope, scope_id_for(scope, turn.view), add.key)
        if bucket in updated_keys:
            builder.notes.append(
                Diagnostic(
                    code="duplicate_key",
                    where=add.key,
                    message="key is also updated by this output",
                )
            )
            continue
        same = live_keys.get(bucket)
        if same is not None and unit_text(same.text).lower() == unit_text(add.value).lower():
            builder.notes.append(
                Diagnostic(
                    code="unchanged", where=add.key, message="fact already stored with this value"
                )
            )
            continue
        builder.record(
            kind=MemoryKind.FACT,
            scope=scope,
            text=add.value,
            key=add.key,
            source=MemorySource.AGENT,
            importance=FACT_IMPORTANCE if add.importance is None else add.importance,
            confidence=1.0 if add.confidence is None else add.confidence,
            where=f"facts_add {add.key}",
        )
    for loop in ops.loops_add:
        builder.record(
            kind=MemoryKind.OPEN_LOOP,
            scope=loop.scope or turn.default_loop_scope,
            text=loop.text,
            source=MemorySource.AGENT,
            importance=OPEN_LOOP_IMPORTANCE if loop.importance is None else loop.importance,
            where="open_loops_add",
        )
    for res in ops.loops_resolve:
        builder.end(res.record, f"resolved: {res.resolution}")
        if micro is not None:
            builder.relate(micro.id, res.record.id, RelationKind.RESOLVES, res.resolution)
    _resolve_keys(builder, visible, explicit)
    event = memory_event(
        "agent_ops_planned",
        floor_no=turn.view.floor_no,
        added=len(builder.records),
        changed=len(builder.changes),
        rejected=sum(1 for d in ops.diagnostics if d.code not in ("clamped", "truncated")),
        diagnostics=diagnostics_payload(tuple(builder.notes)),
    )
    return builder.plan([event])


def _resolve_keys(
    builder: _Builder, visible: Collection[MemoryRecord], explicit: set[tuple[str, str]]
) -> None:
    ended = {change.record_id for change in builder.changes}
    replaced = {old for _, old in explicit}
    stored = [
        r
        for r in visible
        if r.kind is MemoryKind.FACT and r.id not in ended and r.id not in replaced
    ]
    fresh = [r for r in builder.records if r.kind is MemoryKind.FACT]
    resolution = resolve_key_conflicts(
        [*stored, *fresh],
        view=builder.turn.view,
        now=builder.turn.now,
        fresh_ids={r.id for r in fresh},
        explicit_updates=explicit,
    )
    builder.changes.extend(resolution.changes)
    builder.relations.extend(resolution.relations)


def plan_tag_summaries(
    items: Sequence[str], *, turn: AgentTurn, new_id: IdFactory
) -> MutationPlan:
    """A micro summary from the narrator's extracted tags (when no memory agent runs)."""
    builder = _Builder(turn, new_id)
    text = "\n".join(item.strip() for item in items if item.strip())
    if text:
        builder.record(
            kind=MemoryKind.SUMMARY,
            scope=turn.summary_scope,
            text=text,
            source=MemorySource.EXTRACTION,
            importance=TAG_SUMMARY_IMPORTANCE,
            tier=MICRO_TIER,
            where="summary tags",
        )
    return builder.plan([memory_event("extracted", floor_no=turn.view.floor_no, count=len(items))])


def plan_forget(
    record: MemoryRecord, *, view: Viewpoint, now: datetime, reason: str = "forgotten by request"
) -> MutationPlan:
    """Deprecate one record by hand (the ``memory forget`` command)."""
    if record.lifecycle is Lifecycle.DEPRECATED:
        return MutationPlan(
            diagnostics=(
                Diagnostic(code="unchanged", where=record.id, message="already deprecated"),
            )
        )
    change = LifecycleChange(
        record_id=record.id,
        expected=record.lifecycle,
        new=Lifecycle.DEPRECATED,
        at=now,
        ended_branch=view.branch_id,
        ended_floor=view.floor_no,
        reason=reason,
    )
    return MutationPlan(changes=(change,), events=(memory_event("forgotten", id=record.id),))
