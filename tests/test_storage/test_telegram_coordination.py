"""The database side of several processes serving one Telegram bot (issue 19), on SQLite and
PostgreSQL: update claims, per-chat order against live leases, pruning, and the poller role."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from adapters.storage import SqlStorage
from adapters.storage.telegram_repo import SqlTelegramCoordination
from engine.ports import ProcessLease

BOT = 42
NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


async def lease(storage: SqlStorage, owner: str, *, expires_in_s: float) -> None:
    async with storage.unit_of_work() as uow:
        await uow.leases.renew(
            ProcessLease(
                owner=owner,
                host="h",
                pid=1,
                heartbeat_at=NOW,
                expires_at=NOW + timedelta(seconds=expires_in_s),
            )
        )


async def test_an_update_is_claimed_once_across_processes(storage: SqlStorage) -> None:
    coord = SqlTelegramCoordination(storage.engine)
    assert await coord.claim_update(BOT, 7, 100, "a", NOW)
    assert not await coord.claim_update(BOT, 7, 100, "b", NOW)
    assert not await coord.claim_update(BOT, 7, 100, "a", NOW)
    assert await coord.claim_update(BOT + 1, 7, 100, "b", NOW)  # another bot's update 7


async def test_a_chat_waits_for_its_earlier_update_while_its_owner_lives(
    storage: SqlStorage,
) -> None:
    coord = SqlTelegramCoordination(storage.engine)
    await lease(storage, "a", expires_in_s=60)
    await lease(storage, "dead", expires_in_s=-1)
    await coord.claim_update(BOT, 1, 100, "a", NOW)
    await coord.claim_update(BOT, 2, 100, "b", NOW)
    await coord.claim_update(BOT, 3, 200, "dead", NOW)
    await coord.claim_update(BOT, 4, 200, "b", NOW)
    assert await coord.earlier_pending(BOT, 100, 2, NOW)
    assert not await coord.earlier_pending(BOT, 100, 1, NOW)  # nothing before the first
    assert not await coord.earlier_pending(BOT, 300, 2, NOW)  # another chat
    # The earlier update's process lease expired: it no longer holds the chat up.
    assert not await coord.earlier_pending(BOT, 200, 4, NOW)
    await coord.finish_update(BOT, 1, NOW)
    assert not await coord.earlier_pending(BOT, 100, 2, NOW)


async def test_old_claims_are_pruned(storage: SqlStorage) -> None:
    coord = SqlTelegramCoordination(storage.engine)
    await coord.claim_update(BOT, 1, 100, "a", NOW - timedelta(days=2))
    await coord.claim_update(BOT, 2, 100, "a", NOW)
    assert await coord.prune_updates(BOT, NOW - timedelta(days=1)) == 1
    assert await coord.claim_update(BOT, 1, 100, "a", NOW)  # forgotten: claimable again
    assert not await coord.claim_update(BOT, 2, 100, "b", NOW)


async def test_the_role_has_one_holder_until_its_lease_expires(storage: SqlStorage) -> None:
    coord = SqlTelegramCoordination(storage.engine)
    role = "telegram-poller:42"
    later = NOW + timedelta(seconds=30)
    assert await coord.acquire_role(role, "a", NOW, later)
    assert not await coord.acquire_role(role, "b", NOW + timedelta(seconds=10), later)
    assert await coord.acquire_role(role, "a", NOW + timedelta(seconds=10), later)  # renewal
    # a stopped renewing: once its lease expired, b takes over and a cannot come back.
    assert await coord.acquire_role(role, "b", later, later + timedelta(seconds=30))
    assert not await coord.acquire_role(role, "a", later, later + timedelta(seconds=30))
    await coord.release_role(role, "a")  # not the holder: nothing happens
    assert not await coord.acquire_role(role, "a", later, later + timedelta(seconds=30))
    await coord.release_role(role, "b")
    assert await coord.acquire_role(role, "a", later, later + timedelta(seconds=30))
