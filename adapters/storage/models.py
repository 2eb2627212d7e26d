"""The tables, as SQLAlchemy 2 declarative models (the Alembic migrations must match them).

Rows are read and written with Core statements on these tables (``Model.__table__``) so a hot
path costs one round trip per statement; the models exist for the schema and for Alembic.
Nothing is deleted by a platform action: ``hidden`` flags take its place.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def utcnow() -> datetime:
    """The current instant in UTC."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Declarative base with a naming convention, so migrations name constraints stably."""

    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map = {dict[str, Any]: JSON, datetime: DateTime(timezone=True)}


class RealmRow(Base):
    __tablename__ = "realm"
    __table_args__ = (UniqueConstraint("platform", "key", name="uq_realm_platform_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    platform: Mapped[str] = mapped_column(String(32))
    key: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class SessionRow(Base):
    __tablename__ = "session"
    __table_args__ = (UniqueConstraint("platform", "key", name="uq_session_platform_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id"), index=True)
    platform: Mapped[str] = mapped_column(String(32))
    key: Mapped[str] = mapped_column(String(200))
    settings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class BranchRow(Base):
    __tablename__ = "branch"
    __table_args__ = (UniqueConstraint("session_id", "name", name="uq_branch_session_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("session.id"))
    name: Mapped[str] = mapped_column(String(200))
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("branch.id"))
    fork_floor: Mapped[int | None] = mapped_column(Integer)
    fork_page: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class FloorRow(Base):
    __tablename__ = "floor"
    __table_args__ = (
        # One live floor per position: failed floors stay for diagnosis and give their
        # number back, so a retried turn keeps its floor number.
        Index(
            "uq_floor_live_seq",
            "branch_id",
            "seq",
            unique=True,
            sqlite_where=text("state != 'failed'"),
            postgresql_where=text("state != 'failed'"),
        ),
        Index("ix_floor_state", "state"),
        Index("ix_floor_branch_state_seq", "branch_id", "state", "seq"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    branch_id: Mapped[int] = mapped_column(ForeignKey("branch.id"))
    seq: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16))
    active_page: Mapped[int | None] = mapped_column(Integer)
    hidden: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    # The process lease that opened the floor (NULL on floors older than leases).
    owner: Mapped[str | None] = mapped_column(String(64))
    # Group role-play: the member who replies on this floor (NULL: the session's character)
    # and the activation seed of the group turn it starts (NULL on every other floor).
    speaker: Mapped[str | None] = mapped_column(String(200))
    seed: Mapped[int | None] = mapped_column(Integer)


class PageRow(Base):
    __tablename__ = "page"
    __table_args__ = (
        UniqueConstraint("floor_id", "number", name="uq_page_floor_number"),
        # Recovery (at start and at every lease heartbeat) looks for pending pages.
        Index("ix_page_status", "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    floor_id: Mapped[int] = mapped_column(ForeignKey("floor.id"))
    number: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(16))
    hidden: Mapped[bool] = mapped_column(Boolean, default=False)
    error: Mapped[str | None] = mapped_column(Text)
    meta: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # The process lease generating the page (NULL on pages older than leases).
    owner: Mapped[str | None] = mapped_column(String(64))


class MessageRow(Base):
    __tablename__ = "message"
    __table_args__ = (Index("ix_message_floor", "floor_id", "page_id", "seq"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    floor_id: Mapped[int] = mapped_column(ForeignKey("floor.id"))
    page_id: Mapped[int | None] = mapped_column(ForeignKey("page.id"))
    seq: Mapped[int] = mapped_column(Integer)
    role: Mapped[str] = mapped_column(String(16))
    speaker_id: Mapped[str | None] = mapped_column(String(200))
    speaker_name: Mapped[str | None] = mapped_column(String(200))
    raw: Mapped[str] = mapped_column(Text)
    display: Mapped[str] = mapped_column(Text)
    hidden: Mapped[bool] = mapped_column(Boolean, default=False)
    platform_ref: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class PlatformLinkRow(Base):
    __tablename__ = "platform_link"
    __table_args__ = (
        UniqueConstraint("session_id", "platform_ref", name="uq_platform_link_session_ref"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[int] = mapped_column(ForeignKey("session.id"))
    platform_ref: Mapped[str] = mapped_column(String(200))
    branch_id: Mapped[int] = mapped_column(ForeignKey("branch.id"))
    floor_id: Mapped[int] = mapped_column(ForeignKey("floor.id"))
    page_id: Mapped[int | None] = mapped_column(ForeignKey("page.id"))
    role: Mapped[str] = mapped_column(String(16))


class ProcessLeaseRow(Base):
    """A running process: renewed by its heartbeat, deleted when it stops cleanly. A floor
    or page it generates is failed by recovery only once this lease is dead."""

    __tablename__ = "process_lease"

    owner: Mapped[str] = mapped_column(String(64), primary_key=True)
    host: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column()


class AssetRow(Base):
    __tablename__ = "asset"
    __table_args__ = (
        UniqueConstraint("realm_id", "kind", "name", name="uq_asset_realm_kind_name"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id"))
    kind: Mapped[str] = mapped_column(String(16))
    name: Mapped[str] = mapped_column(String(200))
    data: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class VariableLogRow(Base):
    """Every persisted mutation, in ``id`` order, with where it came from."""

    __tablename__ = "variable_log"
    __table_args__ = (
        Index("ix_variable_log_page", "page_id", "scope"),
        Index("ix_variable_log_position", "branch_id", "scope", "seq"),
        Index("ix_variable_log_key", "key", "realm_id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    source: Mapped[str] = mapped_column(String(16))
    scope: Mapped[str] = mapped_column(String(16))
    key: Mapped[str] = mapped_column(String(200))
    op: Mapped[str] = mapped_column(String(8))
    value: Mapped[Any] = mapped_column(JSON, nullable=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id"))
    session_id: Mapped[int] = mapped_column(ForeignKey("session.id"))
    branch_id: Mapped[int | None] = mapped_column(ForeignKey("branch.id"))
    seq: Mapped[int | None] = mapped_column(Integer)
    floor_id: Mapped[int | None] = mapped_column(ForeignKey("floor.id"))
    page_id: Mapped[int | None] = mapped_column(ForeignKey("page.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class VariableValueRow(Base):
    """The materialised value of each key per scope owner (see VariableRepository)."""

    __tablename__ = "variable_value"
    __table_args__ = (
        UniqueConstraint("scope", "owner_id", "key", name="uq_variable_value_scope_owner_key"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scope: Mapped[str] = mapped_column(String(16))
    owner_id: Mapped[int] = mapped_column(Integer)
    key: Mapped[str] = mapped_column(String(200))
    value: Mapped[Any] = mapped_column(JSON, nullable=True)


class VariableSnapshotRow(Base):
    """The branch scope after a page, stored every few floors (immutable)."""

    __tablename__ = "variable_snapshot"

    page_id: Mapped[int] = mapped_column(ForeignKey("page.id"), primary_key=True)
    data: Mapped[dict[str, Any]] = mapped_column()


# The memory tables live in their own module; importing it here puts them on Base.metadata.
from adapters.storage import itemization_models as _itemization_models  # noqa: E402,F401
from adapters.storage import memory_models as _memory_models  # noqa: E402,F401
from adapters.storage import telegram_models as _telegram_models  # noqa: E402,F401
from adapters.storage import vector_models as _vector_models  # noqa: E402,F401
from adapters.storage import web_models as _web_models  # noqa: E402,F401
