"""The tables that let several processes serve one Telegram bot (see
:mod:`adapters.storage.telegram_repo`).

``telegram_update`` records each update id a process took, so a redelivered update reaching
another process is dropped, and so the updates of one chat run in ``update_id`` order across
processes; it keeps the update itself (``payload``), so a live process can take over the
updates of a process that died (:mod:`adapters.telegram.orphans`). ``role_lease`` names the one
process holding a role (the Telegram long poller) until its lease expires.

These models join :class:`adapters.storage.models.Base` (``models`` imports this module at its
end), so Alembic and the "models agree with migrations" test see them.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from adapters.storage.models import Base, utcnow

OWNER_LENGTH = 64
"""A process lease's owner id (the ``process_lease.owner`` column's size)."""
ROLE_LENGTH = 100
"""Longest role name (``telegram-poller:<bot id>``)."""


class TelegramUpdateRow(Base):
    """An update a process took: which bot, which chat, who took it and whether it is done."""

    __tablename__ = "telegram_update"
    __table_args__ = (
        Index("ix_telegram_update_chat", "bot_id", "chat_id", "update_id"),
        # The sweep for a dead process's updates reads only the ones not done.
        Index(
            "ix_telegram_update_open",
            "bot_id",
            "update_id",
            sqlite_where=text("done_at IS NULL"),
            postgresql_where=text("done_at IS NULL"),
        ),
    )

    bot_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    update_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    chat_id: Mapped[int | None] = mapped_column(BigInteger)
    owner: Mapped[str] = mapped_column(String(OWNER_LENGTH))
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    done_at: Mapped[datetime | None] = mapped_column()
    payload: Mapped[str | None] = mapped_column(Text)
    """The update as Telegram sent it (JSON), for a live process to handle if its owner dies;
    None for claims made before migration 0010."""


class RoleLeaseRow(Base):
    """A role held by one process (its lease owner id) until ``expires_at``."""

    __tablename__ = "role_lease"

    role: Mapped[str] = mapped_column(String(ROLE_LENGTH), primary_key=True)
    holder: Mapped[str] = mapped_column(String(OWNER_LENGTH))
    expires_at: Mapped[datetime] = mapped_column()
