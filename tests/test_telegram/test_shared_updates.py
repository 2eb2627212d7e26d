"""Several processes on one bot, the adapter's side (issue 19): claims through
:class:`SharedUpdates` and the poller role through :class:`PollerLeader`, over in-memory
stores (the database side is tests/test_storage/test_telegram_coordination.py, the processes
tests/test_scale/test_telegram_*.py)."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from adapters.telegram.config import LEADER_LEASE_S
from adapters.telegram.leader import RENEW_FRACTION, ROLE_PREFIX, STOP_FRACTION, PollerLeader
from adapters.telegram.updates_seen import UPDATES_KEPT_S, SharedUpdates, utc_now
from bot.config import ConfigError, load_settings


class Ledger:
    """Claims in memory; ``pending`` says whether an earlier update blocks."""

    def __init__(self) -> None:
        self.claims: dict[int, str] = {}
        self.done: list[int] = []
        self.pruned: list[datetime] = []
        self.pending = False

    async def claim_update(
        self,
        bot_id: int,
        update_id: int,
        chat_id: int | None,
        owner: str,
        now: datetime,
        payload: str | None = None,
    ) -> bool:
        if update_id in self.claims:
            return False
        self.claims[update_id] = owner
        return True

    async def earlier_pending(
        self, bot_id: int, chat_id: int, update_id: int, now: datetime
    ) -> bool:
        return self.pending

    async def finish_update(self, bot_id: int, update_id: int, now: datetime) -> None:
        self.done.append(update_id)

    async def prune_updates(self, bot_id: int, before: datetime) -> int:
        self.pruned.append(before)
        return 0


async def test_an_update_is_admitted_by_one_process_and_again_by_the_same() -> None:
    ledger = Ledger()
    a = SharedUpdates(ledger, bot_id=1, owner="a")
    b = SharedUpdates(ledger, bot_id=1, owner="b")
    assert await a.admit(5, 100)
    assert await a.admit(5, 100)  # the webhook handler claimed it, then the dispatcher asks
    assert not await b.admit(5, 100)
    await a.finish(5)
    assert ledger.done == [5]


async def test_claims_older_than_the_kept_time_are_pruned() -> None:
    ledger = Ledger()
    before = utc_now()
    await SharedUpdates(ledger, bot_id=1, owner="a").admit(1, None)
    assert len(ledger.pruned) == 1
    kept = before - ledger.pruned[0]
    assert timedelta(seconds=UPDATES_KEPT_S) - timedelta(seconds=5) < kept
    assert kept <= timedelta(seconds=UPDATES_KEPT_S)


async def test_a_chat_waits_for_an_earlier_update_at_most_the_named_limit() -> None:
    ledger = Ledger()
    shared = SharedUpdates(ledger, bot_id=1, owner="a", poll_s=0.01, wait_max_s=0.05)
    ledger.pending = True
    await shared.wait_turn(2, 100)  # returns (logged) instead of blocking the chat for good
    ledger.pending = False
    await shared.wait_turn(3, 100)


class Roles:
    def __init__(self) -> None:
        self.holder: str | None = None
        self.expires: datetime | None = None
        self.fail = False
        self.hang = False

    async def acquire_role(
        self, role: str, holder: str, now: datetime, expires_at: datetime
    ) -> bool:
        if self.fail:
            raise OSError("database unreachable")
        if self.hang:
            await asyncio.Event().wait()
        assert role.startswith(ROLE_PREFIX)
        if self.holder in (None, holder) or (self.expires is not None and self.expires <= now):
            self.holder, self.expires = holder, expires_at
            return True
        return False

    async def release_role(self, role: str, holder: str) -> None:
        if self.holder == holder:
            self.holder = None


def leader(roles: Roles, name: str, events: list[str]) -> PollerLeader:
    async def start() -> None:
        events.append(f"{name} polls")

    async def stop() -> None:
        events.append(f"{name} stops")

    return PollerLeader(roles, bot_id=1, holder=name, lease_s=30.0, start=start, stop=stop)


async def test_one_leader_polls_and_the_other_takes_over_after_release() -> None:
    roles, events = Roles(), []
    a, b = leader(roles, "a", events), leader(roles, "b", events)
    await a.step()
    await b.step()
    await a.step()  # a renewal starts nothing twice
    assert events == ["a polls"] and a.polling and not b.polling
    await a.close()
    await b.step()
    assert events == ["a polls", "a stops", "b polls"] and roles.holder == "b"


async def test_a_leader_that_cannot_renew_stops_before_its_lease_can_expire() -> None:
    roles, events = Roles(), []
    a = leader(roles, "a", events)
    await a.step()
    roles.fail = True
    await a.step()  # renewed just now: keeps polling through a database hiccup
    assert a.polling
    a._renewed_at = time.monotonic() - a.lease_s * STOP_FRACTION
    await a.step()
    assert not a.polling and events == ["a polls", "a stops"]
    assert 0 < RENEW_FRACTION < STOP_FRACTION < 1


def test_the_poller_lease_is_a_positive_setting(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text("[telegram]\nleader_lease_s = 5\n")
    assert load_settings(path, environ={}).telegram.leader_lease_s == 5.0
    path.write_text("[telegram]\nleader_lease_s = 0\n")
    with pytest.raises(ConfigError, match="leader_lease_s"):
        load_settings(path, environ={})
    assert load_settings(None, environ={}).telegram.leader_lease_s == LEADER_LEASE_S


async def test_a_hanging_database_stops_the_leader_within_its_lease() -> None:
    roles, events = Roles(), []
    name = "a"

    async def start() -> None:
        events.append("polls")

    async def stop() -> None:
        events.append("stops")

    # A short lease so the bounded renewal gives up quickly.
    a = PollerLeader(roles, bot_id=1, holder=name, lease_s=0.3, start=start, stop=stop)
    await a.step()
    roles.hang = True
    a._renewed_at = time.monotonic() - a.lease_s * STOP_FRACTION
    await asyncio.wait_for(a.step(), 5.0)  # the renewal is cut at a third of the lease
    assert events == ["polls", "stops"] and not a.polling
