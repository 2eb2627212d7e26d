"""Rows to engine values (the only place that knows both shapes).

Column values come out of SQLAlchemy untyped (``Any``); the ``cast`` to a ``Literal`` below
states what the column's check constraint or writer guarantees.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Protocol, cast

from engine.timeline.values import (
    Asset,
    AssetKind,
    Branch,
    Floor,
    FloorState,
    LinkRole,
    Message,
    MessageRole,
    Page,
    PageStatus,
    PlatformLink,
    Realm,
    Session,
    SessionSettings,
)
from engine.variables.values import LogEntry, LogSource, Mutation, MutationOp, Scope


class Columns(Protocol):
    """A row's columns by name: a SQLAlchemy ``Row``, or one table's share of a joined row."""

    def __getattr__(self, name: str, /) -> Any: ...


def aware(value: datetime) -> datetime:
    """SQLite hands back naive datetimes; everything stored is UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def realm(row: Columns) -> Realm:
    return Realm(id=row.id, platform=row.platform, key=row.key)


def session(row: Columns) -> Session:
    return Session(
        id=row.id,
        realm_id=row.realm_id,
        platform=row.platform,
        key=row.key,
        settings=SessionSettings.from_json(row.settings),
        created_at=aware(row.created_at),
    )


def branch(row: Columns) -> Branch:
    return Branch(
        id=row.id,
        session_id=row.session_id,
        name=row.name,
        parent_id=row.parent_id,
        fork_floor=row.fork_floor,
        fork_page=row.fork_page,
        created_at=aware(row.created_at),
    )


def floor(row: Columns) -> Floor:
    return Floor(
        id=row.id,
        branch_id=row.branch_id,
        seq=row.seq,
        state=cast(FloorState, row.state),
        active_page=row.active_page,
        hidden=bool(row.hidden),
        error=row.error,
        created_at=aware(row.created_at),
        updated_at=aware(row.updated_at),
        owner=row.owner,
        speaker=row.speaker,
        seed=row.seed,
    )


def page(row: Columns) -> Page:
    return Page(
        id=row.id,
        floor_id=row.floor_id,
        number=row.number,
        status=cast(PageStatus, row.status),
        hidden=bool(row.hidden),
        error=row.error,
        meta=dict(row.meta or {}),
        created_at=aware(row.created_at),
        owner=row.owner,
    )


def message(row: Columns) -> Message:
    return Message(
        id=row.id,
        floor_id=row.floor_id,
        page_id=row.page_id,
        seq=row.seq,
        role=cast(MessageRole, row.role),
        speaker_id=row.speaker_id,
        speaker_name=row.speaker_name,
        raw=row.raw,
        display=row.display,
        hidden=bool(row.hidden),
        platform_ref=row.platform_ref,
        created_at=aware(row.created_at),
    )


def link(row: Columns) -> PlatformLink:
    return PlatformLink(
        session_id=row.session_id,
        platform_ref=row.platform_ref,
        branch_id=row.branch_id,
        floor_id=row.floor_id,
        page_id=row.page_id,
        role=cast(LinkRole, row.role),
    )


def asset(row: Columns) -> Asset:
    return Asset(
        id=row.id,
        realm_id=row.realm_id,
        kind=cast(AssetKind, row.kind),
        name=row.name,
        data=dict(row.data or {}),
        created_at=aware(row.created_at),
        updated_at=aware(row.updated_at),
    )


def mutation(row: Columns) -> Mutation:
    return Mutation(
        op=cast(MutationOp, row.op),
        scope=cast(Scope, row.scope),
        key=row.key,
        value=None if row.op == "delete" else row.value,
    )


def log_entry(row: Columns) -> LogEntry:
    return LogEntry(
        id=row.id,
        mutation=mutation(row),
        source=cast(LogSource, row.source),
        session_id=row.session_id,
        realm_id=row.realm_id,
        branch_id=row.branch_id,
        seq=row.seq,
        floor_id=row.floor_id,
        page_id=row.page_id,
        created_at=aware(row.created_at),
    )
