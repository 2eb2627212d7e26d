"""Coordination of several processes serving one Telegram bot, kept in the database.

:class:`SqlTelegramCoordination` implements the ports of :mod:`adapters.telegram.updates_seen`
and :mod:`adapters.telegram.leader` (structurally: the adapters stay independent):

- an update id is *claimed* by one process with an insert that a second claim, from any
  process, finds taken (the primary key decides, no lock is held);
- an update waits while an earlier update of its chat, claimed by a process whose lease is
  still alive, is not done, so one chat's updates run in ``update_id`` order across processes;
- an update whose owner's lease expired while it was not done is *taken over* by one live
  process with a compare-and-set on its owner (:meth:`SqlTelegramCoordination.take_update`);
- a role (the long poller) is taken with one upsert that succeeds only for its holder or once
  the previous holder's lease expired.

Each call is its own short transaction: nothing is held open across a turn.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Row, Table, and_, delete, exists, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage.tables import LEASE, ROLE_LEASE, TELEGRAM_UPDATE


class SqlTelegramCoordination:
    """Update ledger and role leases over one engine (see the module docstring)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    def _insert(self, table: Table) -> postgresql.Insert | sqlite.Insert:
        if self._engine.dialect.name == "postgresql":
            return postgresql.insert(table)
        return sqlite.insert(table)

    async def claim_update(
        self,
        bot_id: int,
        update_id: int,
        chat_id: int | None,
        owner: str,
        now: datetime,
        payload: str | None = None,
    ) -> bool:
        """Record ``update_id`` (and the update, ``payload``) as taken by ``owner``; False when
        any process took it before."""
        stmt = (
            self._insert(TELEGRAM_UPDATE)
            .values(
                bot_id=bot_id,
                update_id=update_id,
                chat_id=chat_id,
                owner=owner,
                received_at=now,
                payload=payload,
            )
            .on_conflict_do_nothing(index_elements=["bot_id", "update_id"])
            .returning(TELEGRAM_UPDATE.c.update_id)
        )
        async with self._engine.begin() as conn:
            return (await conn.execute(stmt)).first() is not None

    async def earlier_pending(
        self, bot_id: int, chat_id: int, update_id: int, now: datetime
    ) -> bool:
        """Whether an earlier update of the chat is still being handled by a live process."""
        u = TELEGRAM_UPDATE.c
        alive = exists().where(and_(LEASE.c.owner == u.owner, LEASE.c.expires_at > now))
        stmt = select(
            exists().where(
                u.bot_id == bot_id,
                u.chat_id == chat_id,
                u.update_id < update_id,
                u.done_at.is_(None),
                alive,
            )
        )
        async with self._engine.connect() as conn:
            return bool((await conn.execute(stmt)).scalar())

    async def finish_update(self, bot_id: int, update_id: int, now: datetime) -> None:
        """Mark the update handled: later updates of its chat may run."""
        u = TELEGRAM_UPDATE.c
        stmt = (
            update(TELEGRAM_UPDATE)
            .where(u.bot_id == bot_id, u.update_id == update_id)
            .values(done_at=now)
        )
        async with self._engine.begin() as conn:
            await conn.execute(stmt)

    async def orphaned_updates(
        self, bot_id: int, owner: str, now: datetime, limit: int
    ) -> list[tuple[int, str, str]]:
        """Up to ``limit`` updates not done, with a payload, whose owner (not ``owner``) has no
        lease alive at ``now``: ``(update_id, owner, payload)``, oldest first."""
        u = TELEGRAM_UPDATE.c
        alive = exists().where(and_(LEASE.c.owner == u.owner, LEASE.c.expires_at > now))
        stmt = (
            select(u.update_id, u.owner, u.payload)
            .where(
                u.bot_id == bot_id,
                u.done_at.is_(None),
                u.payload.is_not(None),
                u.owner != owner,
                ~alive,
            )
            .order_by(u.update_id)
            .limit(limit)
        )
        async with self._engine.connect() as conn:
            found: list[Row[tuple[int, str, str]]] = list(await conn.execute(stmt))
        return [(row.update_id, row.owner, row.payload) for row in found]

    async def take_update(self, bot_id: int, update_id: int, old_owner: str, owner: str) -> bool:
        """Make ``owner`` the owner of an update still owned by ``old_owner`` and not done;
        False when another process took it over (or finished it) first."""
        u = TELEGRAM_UPDATE.c
        stmt = (
            update(TELEGRAM_UPDATE)
            .where(
                u.bot_id == bot_id,
                u.update_id == update_id,
                u.owner == old_owner,
                u.done_at.is_(None),
            )
            .values(owner=owner)
            .returning(u.update_id)
        )
        async with self._engine.begin() as conn:
            return (await conn.execute(stmt)).first() is not None

    async def prune_updates(self, bot_id: int, before: datetime) -> int:
        """Forget the updates received before ``before``; how many were removed."""
        u = TELEGRAM_UPDATE.c
        stmt = delete(TELEGRAM_UPDATE).where(u.bot_id == bot_id, u.received_at < before)
        async with self._engine.begin() as conn:
            return (await conn.execute(stmt)).rowcount

    async def acquire_role(
        self, role: str, holder: str, now: datetime, expires_at: datetime
    ) -> bool:
        """Take or renew ``role`` for ``holder`` until ``expires_at``; False while another
        holder's lease on it has not expired."""
        r = ROLE_LEASE.c
        insert = self._insert(ROLE_LEASE).values(role=role, holder=holder, expires_at=expires_at)
        stmt = insert.on_conflict_do_update(
            index_elements=["role"],
            set_={"holder": holder, "expires_at": expires_at},
            where=or_(r.holder == holder, r.expires_at <= now),
        ).returning(r.holder)
        async with self._engine.begin() as conn:
            return (await conn.execute(stmt)).first() is not None

    async def release_role(self, role: str, holder: str) -> None:
        """Give ``role`` up if ``holder`` holds it (another process may take it at once)."""
        r = ROLE_LEASE.c
        async with self._engine.begin() as conn:
            await conn.execute(delete(ROLE_LEASE).where(r.role == role, r.holder == holder))
