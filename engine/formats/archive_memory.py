"""Memory records and relations inside a native archive (see :mod:`engine.formats.archive`).

A stored :class:`~engine.memory.records.MemoryRecord` names its realm, session and branches by
database id; in an archive those become positions: ``scope_branch``, ``origin_branch`` and
``ended_branch`` are branch indices, the floor of a floor-scoped record is ``scope_floor``, and
relations point at records by their index in ``records``. :func:`to_archive_record` and
:func:`from_archive_record` convert in both directions given the id maps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

from engine.errors import FormatError
from engine.formats.archive_fields import (
    MAX_LONG_TEXT,
    MAX_SHORT_TEXT,
    Fields,
    check_text,
    opt_ref,
    ref,
)
from engine.memory.records import (
    Lifecycle,
    MemoryKind,
    MemoryRecord,
    MemoryRelation,
    MemoryScope,
    MemorySource,
    Provenance,
    RelationKind,
    floor_scope_id,
)

MAX_MEMORY_ITEMS: Final = 1_000_000
"""Most memory records (and most relations) in one archive."""
MAX_FLAGS: Final = 64
"""Most flags on one memory record."""

_KINDS: Final = tuple(k.value for k in MemoryKind)
_SCOPES: Final = tuple(s.value for s in MemoryScope)
_LIFECYCLES: Final = tuple(v.value for v in Lifecycle)
_SOURCES: Final = tuple(v.value for v in MemorySource)
_RELATIONS: Final = tuple(v.value for v in RelationKind)


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveMemoryRecord:
    """A memory record with its ids replaced by archive positions (see the module docstring).
    ``record`` keeps every other field; its id, realm, session and branch fields are unused."""

    record: MemoryRecord
    scope_branch: int | None
    scope_floor: int | None
    origin_branch: int | None
    ended_branch: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveMemoryRelation:
    """A relation between records ``source`` and ``target`` (indices)."""

    source: int
    target: int
    kind: RelationKind
    created_at: datetime
    floor_no: int
    note: str


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat()


def record_to_json(item: ArchiveMemoryRecord) -> dict[str, Any]:
    """One record as archive JSON."""
    r = item.record
    return {
        "kind": r.kind.value,
        "scope": r.scope.value,
        "scope_branch": item.scope_branch,
        "scope_floor": item.scope_floor,
        "origin_branch": item.origin_branch,
        "text": r.text,
        "provenance": {
            "source": r.provenance.source.value,
            "floor_no": r.provenance.floor_no,
            "message_ref": r.provenance.message_ref,
            "job_id": r.provenance.job_id,
        },
        "created_at": _iso(r.created_at),
        "created_floor": r.created_floor,
        "key": r.key,
        "tier": r.tier,
        "importance": r.importance,
        "confidence": r.confidence,
        "lifecycle": r.lifecycle.value,
        "updated_at": _iso(r.updated_at),
        "last_used_at": _iso(r.last_used_at),
        "last_used_floor": r.last_used_floor,
        "coverage_start": r.coverage_start,
        "coverage_end": r.coverage_end,
        "ended_branch": item.ended_branch,
        "ended_floor": r.ended_floor,
        "token_estimate": r.token_estimate,
        "flags": list(r.flags),
    }


def relation_to_json(item: ArchiveMemoryRelation) -> dict[str, Any]:
    """One relation as archive JSON."""
    return {
        "source": item.source,
        "target": item.target,
        "kind": item.kind.value,
        "created_at": _iso(item.created_at),
        "floor_no": item.floor_no,
        "note": item.note,
    }


def read_memory(
    memory: Fields, *, branches: int
) -> tuple[tuple[ArchiveMemoryRecord, ...], tuple[ArchiveMemoryRelation, ...]]:
    """Validate the ``memory`` object of an archive."""
    records = tuple(
        _record(
            Fields(item, source=memory.source, path=f"{memory.where('records')}[{i}]"), branches
        )
        for i, item in enumerate(memory.items("records", limit=MAX_MEMORY_ITEMS))
    )
    relations = tuple(
        _relation(
            Fields(item, source=memory.source, path=f"{memory.where('relations')}[{i}]"),
            len(records),
        )
        for i, item in enumerate(memory.items("relations", limit=MAX_MEMORY_ITEMS))
    )
    return records, relations


def _record(r: Fields, branches: int) -> ArchiveMemoryRecord:
    scope = MemoryScope(r.choice("scope", _SCOPES))
    scope_branch = opt_ref(r, "scope_branch", branches)
    scope_floor = r.opt_int("scope_floor", minimum=0)
    needs_branch = scope in (MemoryScope.BRANCH, MemoryScope.FLOOR)
    if needs_branch != (scope_branch is not None):
        raise r.fail(
            "scope_branch",
            f"a {scope.value} record {'needs' if needs_branch else 'has no'} branch",
        )
    if (scope is MemoryScope.FLOOR) != (scope_floor is not None):
        raise r.fail("scope_floor", "only a floor record has a floor, and it must have one")
    prov = r.child("provenance")
    flags: list[str] = []
    for index, flag in enumerate(r.items("flags", limit=MAX_FLAGS)):
        if not isinstance(flag, str):
            raise r.fail(f"flags[{index}]", "expected text")
        check_text(flag, limit=MAX_SHORT_TEXT, source=r.source, field=r.where(f"flags[{index}]"))
        flags.append(flag)
    record = MemoryRecord(
        id="",
        kind=MemoryKind(r.choice("kind", _KINDS)),
        scope=scope,
        scope_id="",
        realm_id="",
        session_id=None,
        origin_branch=None,
        text=r.text("text", limit=MAX_LONG_TEXT),
        provenance=Provenance(
            source=MemorySource(prov.choice("source", _SOURCES)),
            floor_no=prov.integer("floor_no"),
            message_ref=prov.opt_text("message_ref"),
            job_id=prov.opt_text("job_id", limit=300),
        ),
        created_at=r.instant("created_at"),
        created_floor=r.integer("created_floor"),
        key=r.opt_text("key"),
        tier=r.opt_int("tier"),
        importance=r.number("importance"),
        confidence=r.number("confidence"),
        lifecycle=Lifecycle(r.choice("lifecycle", _LIFECYCLES)),
        updated_at=r.opt_instant("updated_at"),
        last_used_at=r.opt_instant("last_used_at"),
        last_used_floor=r.opt_int("last_used_floor"),
        coverage_start=r.opt_int("coverage_start"),
        coverage_end=r.opt_int("coverage_end"),
        ended_floor=r.opt_int("ended_floor"),
        token_estimate=r.integer("token_estimate"),
        flags=tuple(flags),
    )
    return ArchiveMemoryRecord(
        record=record,
        scope_branch=scope_branch,
        scope_floor=scope_floor,
        origin_branch=opt_ref(r, "origin_branch", branches),
        ended_branch=opt_ref(r, "ended_branch", branches),
    )


def _relation(r: Fields, records: int) -> ArchiveMemoryRelation:
    return ArchiveMemoryRelation(
        source=ref(r, "source", records),
        target=ref(r, "target", records),
        kind=RelationKind(r.choice("kind", _RELATIONS)),
        created_at=r.instant("created_at"),
        floor_no=r.integer("floor_no"),
        note=r.text("note", limit=MAX_LONG_TEXT),
    )


# ------------------------------------------------------------------ conversion with id maps


def to_archive_record(
    record: MemoryRecord, branch_index: Mapping[str, int]
) -> ArchiveMemoryRecord | None:
    """``record`` with branch ids turned into positions; None when its scope names a branch
    the session does not have (it cannot be placed, so it is not exported)."""
    scope_branch: int | None = None
    scope_floor: int | None = None
    if record.scope is MemoryScope.BRANCH:
        scope_branch = branch_index.get(record.scope_id)
        if scope_branch is None:
            return None
    elif record.scope is MemoryScope.FLOOR:
        branch_id, _, floor = record.scope_id.rpartition("#")
        scope_branch = branch_index.get(branch_id)
        if scope_branch is None or not floor.isdigit():
            return None
        scope_floor = int(floor)
    return ArchiveMemoryRecord(
        record=record,
        scope_branch=scope_branch,
        scope_floor=scope_floor,
        origin_branch=None
        if record.origin_branch is None
        else branch_index.get(record.origin_branch),
        ended_branch=None
        if record.ended_branch is None
        else branch_index.get(record.ended_branch),
    )


def from_archive_record(
    item: ArchiveMemoryRecord,
    *,
    new_id: str,
    realm_id: str,
    session_id: str,
    branch_id: Callable[[int], str],
) -> MemoryRecord:
    """The record to store in the target session (new ids, same everything else)."""
    r = item.record
    if r.scope is MemoryScope.GLOBAL:
        scope_id = realm_id
    elif r.scope is MemoryScope.CHAT:
        scope_id = session_id
    elif item.scope_branch is None:  # validated: cannot happen for branch/floor scopes
        raise FormatError(f"memory record needs a branch for scope {r.scope.value}")
    elif r.scope is MemoryScope.BRANCH:
        scope_id = branch_id(item.scope_branch)
    else:
        scope_id = floor_scope_id(branch_id(item.scope_branch), item.scope_floor or 0)
    return replace(
        r,
        id=new_id,
        scope_id=scope_id,
        realm_id=realm_id,
        session_id=session_id,
        origin_branch=None if item.origin_branch is None else branch_id(item.origin_branch),
        ended_branch=None if item.ended_branch is None else branch_id(item.ended_branch),
    )


def to_archive_relation(
    relation: MemoryRelation, record_index: Mapping[str, int]
) -> ArchiveMemoryRelation | None:
    """``relation`` between exported records (None when an end was not exported)."""
    source = record_index.get(relation.source_id)
    target = record_index.get(relation.target_id)
    if source is None or target is None:
        return None
    return ArchiveMemoryRelation(
        source=source,
        target=target,
        kind=relation.kind,
        created_at=relation.created_at,
        floor_no=relation.floor_no,
        note=relation.note,
    )
