"""Tables of the long-term memory: records, relations between them, and memory job states.

Columns mirror :class:`engine.memory.records.MemoryRecord` (its :class:`Provenance` flattened
into ``provenance_*`` columns), :class:`~engine.memory.records.MemoryRelation` and
:class:`engine.memory.jobs.JobState` field for field, so conversion is a plain copy. Memory ids
are the engine's strings; realm, session and branch ids are the timeline's ids as text, and
deliberately carry no foreign key: memory outlives an archived branch, and a realm-wide record
has no session.

These models join :class:`adapters.storage.models.Base` (``models`` imports this module at its
end), so Alembic and the "models agree with migrations" test see them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from adapters.storage.models import Base

ID_LENGTH = 64
"""Longest memory record id (engine ids are short: ``mem-12`` or a hex uuid)."""
SCOPE_ID_LENGTH = 200
"""Longest scope id (a floor scope is ``<branch>#<floor>``)."""
STORY_DATE_LENGTH = 64
"""Longest in-story date kept on a record (longer values are cut when written)."""
JOB_SCOPE_LENGTH = 300
"""Longest job scope key (``<realm>/<session>/<scope>:<scope id>``)."""


class MemoryRecordRow(Base):
    """One fact, summary or open loop (see :class:`engine.memory.records.MemoryRecord`)."""

    __tablename__ = "memory_record"
    __table_args__ = (
        # Loading what a viewer may see: one realm, one session (or realm-wide), by lifecycle.
        Index("ix_memory_record_realm_session", "realm_id", "session_id", "lifecycle"),
        # Compaction and listing per scope.
        Index("ix_memory_record_scope", "scope", "scope_id", "kind", "lifecycle"),
        # One active fact per key.
        Index("ix_memory_record_key", "realm_id", "key"),
    )

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    scope: Mapped[str] = mapped_column(String(16))
    scope_id: Mapped[str] = mapped_column(String(SCOPE_ID_LENGTH))
    realm_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    session_id: Mapped[str | None] = mapped_column(String(ID_LENGTH))
    origin_branch: Mapped[str | None] = mapped_column(String(ID_LENGTH))
    text: Mapped[str] = mapped_column(Text)
    provenance_source: Mapped[str] = mapped_column(String(16))
    provenance_floor: Mapped[int] = mapped_column(Integer)
    provenance_message_ref: Mapped[str | None] = mapped_column(String(200))
    provenance_job_id: Mapped[str | None] = mapped_column(String(JOB_SCOPE_LENGTH))
    created_at: Mapped[datetime] = mapped_column()
    created_floor: Mapped[int] = mapped_column(Integer)
    key: Mapped[str | None] = mapped_column(String(200))
    tier: Mapped[int | None] = mapped_column(Integer)
    importance: Mapped[float] = mapped_column(Float)
    confidence: Mapped[float] = mapped_column(Float)
    lifecycle: Mapped[str] = mapped_column(String(16))
    updated_at: Mapped[datetime | None] = mapped_column()
    last_used_at: Mapped[datetime | None] = mapped_column()
    last_used_floor: Mapped[int | None] = mapped_column(Integer)
    coverage_start: Mapped[int | None] = mapped_column(Integer)
    coverage_end: Mapped[int | None] = mapped_column(Integer)
    ended_branch: Mapped[str | None] = mapped_column(String(ID_LENGTH))
    ended_floor: Mapped[int | None] = mapped_column(Integer)
    token_estimate: Mapped[int] = mapped_column(Integer)
    flags: Mapped[Any] = mapped_column(JSON)
    story_date: Mapped[str | None] = mapped_column(String(STORY_DATE_LENGTH))


class MemoryRelationRow(Base):
    """A typed edge ``source --kind--> target`` (see ``MemoryRelation``); ``id`` keeps order."""

    __tablename__ = "memory_relation"
    __table_args__ = (
        Index("ix_memory_relation_source", "source_id"),
        Index("ix_memory_relation_target", "target_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source_id: Mapped[str] = mapped_column(ForeignKey("memory_record.id"))
    target_id: Mapped[str] = mapped_column(ForeignKey("memory_record.id"))
    kind: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column()
    floor_no: Mapped[int] = mapped_column(Integer)
    note: Mapped[str] = mapped_column(Text)


class MemoryJobRow(Base):
    """The state of one memory job per (type, scope); ``revision`` is the compare-and-set."""

    __tablename__ = "memory_job"
    __table_args__ = (Index("ix_memory_job_due", "status", "next_run_at"),)

    job_type: Mapped[str] = mapped_column(String(32), primary_key=True)
    scope_key: Mapped[str] = mapped_column(String(JOB_SCOPE_LENGTH), primary_key=True)
    status: Mapped[str] = mapped_column(String(16))
    revision: Mapped[int] = mapped_column(Integer)
    attempts: Mapped[int] = mapped_column(Integer)
    next_run_at: Mapped[datetime | None] = mapped_column()
    lease_owner: Mapped[str | None] = mapped_column(String(200))
    leased_at: Mapped[datetime | None] = mapped_column()
    lease_expires_at: Mapped[datetime | None] = mapped_column()
    takeovers: Mapped[int] = mapped_column(Integer)
    last_error: Mapped[str | None] = mapped_column(Text)
    last_success_at: Mapped[datetime | None] = mapped_column()


class MemoryRevisionRow(Base):
    """A realm's memory revision: triggers (migration ``0008``) bump it on every change of the
    realm's records or relations, so a process's cached view of them is checked with one
    small read."""

    __tablename__ = "memory_revision"

    realm_id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True)
    revision: Mapped[int] = mapped_column(Integer)
