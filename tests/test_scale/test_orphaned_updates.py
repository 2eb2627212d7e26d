"""Telegram updates a killed process had taken are handled by a live one (issue 19).

A webhook process acknowledges an update as soon as it has claimed it, so Telegram never sends
it again; if the process dies before handling it, a live process takes it over from the shared
ledger once the dead one's lease expired. Here: the take-over on SQLite and PostgreSQL (one of
two concurrent sweeps wins each update), what the sweep does with each kind of update, the
sweep's period, and two real ``tavernbot run`` processes on one PostgreSQL database where the
one streaming a chat's first message, with the chat's second message queued behind it, is
SIGKILLed.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from aiogram import Bot, Dispatcher
from aiogram.types import Update

from adapters.storage import SqlStorage
from adapters.storage.telegram_repo import SqlTelegramCoordination
from adapters.telegram.middlewares import OrderMiddleware
from adapters.telegram.orphans import OrphanSweep, replayable
from adapters.telegram.runner import INTERRUPTED_LINE
from adapters.telegram.state import ChatState
from adapters.telegram.updates_seen import ORPHAN_SWEEP_S, SharedUpdates
from engine.ports import ProcessLease
from engine.timeline.leases import LEASE_EXPIRY_S as DEFAULT_LEASE_EXPIRY_S
from engine.turns.api import PlatformRef, RoleplayService, SessionKey
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeResponse, echo_responder
from tests.fakes.telegram.server import FakeTelegramServer
from tests.test_e2e.test_two_processes import pg_database  # noqa: F401  (fixture)
from tests.test_scale.telegram_support import (
    TOKEN,
    Cluster,
    database,
    eventually,
    models_asked,
    replies,
    rows,
    wait_until,
)
from tests.test_storage.conftest import storage  # noqa: F401  (fixture)

BOT = 123456
NOW = datetime.now(UTC)
"""When the test's updates were received (claims only; leases use the current time)."""


def message_update(update_id: int, chat_id: int, message_id: int, text: str) -> dict[str, Any]:
    """A private chat's text message as Telegram posts it."""
    user = {"id": chat_id, "is_bot": False, "first_name": f"U{chat_id}"}
    return {
        "update_id": update_id,
        "message": {
            "message_id": message_id,
            "date": 1_800_000_000,
            "chat": {"id": chat_id, "type": "private", "first_name": f"U{chat_id}"},
            "from": user,
            "text": text,
        },
    }


def callback_update(update_id: int, chat_id: int) -> dict[str, Any]:
    """A button press under one of the bot's messages."""
    user = {"id": chat_id, "is_bot": False, "first_name": f"U{chat_id}"}
    bot_message = {
        "message_id": 1,
        "date": 1_800_000_000,
        "chat": {"id": chat_id, "type": "private", "first_name": f"U{chat_id}"},
        "from": {"id": BOT, "is_bot": True, "first_name": "Bot"},
        "text": "a reply",
    }
    return {
        "update_id": update_id,
        "callback_query": {
            "id": "cb1",
            "from": user,
            "chat_instance": "ci",
            "message": bot_message,
            "data": "regen:main",
        },
    }


async def lease(storage: SqlStorage, owner: str, *, expires_in_s: float) -> None:  # noqa: F811
    """A process lease for ``owner`` expiring ``expires_in_s`` from now (negative: dead)."""
    now = datetime.now(UTC)  # not NOW: the sweeps compare it with the time they run
    async with storage.unit_of_work() as uow:
        await uow.leases.renew(
            ProcessLease(
                owner=owner,
                host="h",
                pid=1,
                heartbeat_at=now,
                expires_at=now + timedelta(seconds=expires_in_s),
            )
        )


async def claim(coord: SqlTelegramCoordination, owner: str, update: dict[str, Any]) -> None:
    chat = (update.get("message") or update["callback_query"]["message"])["chat"]["id"]
    assert await coord.claim_update(BOT, update["update_id"], chat, owner, NOW, json.dumps(update))


async def test_one_of_two_concurrent_sweeps_takes_each_dead_process_update(
    storage: SqlStorage,  # noqa: F811
) -> None:
    coord = SqlTelegramCoordination(storage.engine)
    await lease(storage, "dead", expires_in_s=-1)
    await lease(storage, "live", expires_in_s=60)
    for owner in ("b", "c"):
        await lease(storage, owner, expires_in_s=60)
    orphans = [message_update(n, 100 + n % 3, n, f"line {n}") for n in range(1, 31)]
    for update in reversed(orphans):  # claimed out of order: taken oldest first anyway
        await claim(coord, "dead", update)
    await claim(coord, "live", message_update(40, 100, 40, "a live process's"))
    assert await coord.claim_update(BOT, 41, 100, "dead", NOW)  # before payloads: left alone
    await claim(coord, "dead", message_update(42, 100, 42, "done already"))
    await coord.finish_update(BOT, 42, NOW)
    other_bot = message_update(43, 100, 43, "another bot's")
    assert await coord.claim_update(BOT + 1, 43, 100, "dead", NOW, json.dumps(other_bot))
    b = SharedUpdates(coord, bot_id=BOT, owner="b")
    c = SharedUpdates(coord, bot_id=BOT, owner="c")
    took_b, took_c = await asyncio.gather(b.take_orphans(), c.take_orphans())
    ids_b = [u for u, _ in took_b]
    ids_c = [u for u, _ in took_c]
    assert not set(ids_b) & set(ids_c)
    assert sorted(ids_b + ids_c) == list(range(1, 31))
    assert ids_b == sorted(ids_b) and ids_c == sorted(ids_c)  # oldest first
    assert dict(took_b + took_c)[7] == json.dumps(orphans[6])
    owners = await rows(
        storage.engine, "SELECT update_id, owner FROM telegram_update WHERE bot_id = :b", b=BOT
    )
    owner_of = {r.update_id: r.owner for r in owners}
    assert all(owner_of[u] == "b" for u in ids_b) and all(owner_of[u] == "c" for u in ids_c)
    assert (owner_of[40], owner_of[41], owner_of[42]) == ("live", "dead", "dead")
    # A taken update is the winner's as if it had claimed it: the loser cannot admit it.
    first = ids_b[0]
    assert await b.admit(first, None)
    assert not await c.admit(first, None)
    # Nothing is left to take; a live owner's update is never taken.
    assert await b.take_orphans() == [] and await c.take_orphans() == []


async def test_a_take_over_compares_the_owner_and_done(
    storage: SqlStorage,  # noqa: F811
) -> None:
    coord = SqlTelegramCoordination(storage.engine)
    await claim(coord, "dead", message_update(1, 100, 1, "x"))
    await claim(coord, "dead", message_update(2, 100, 2, "y"))
    await coord.finish_update(BOT, 2, NOW)  # finished after it was listed
    assert not await coord.take_update(BOT, 2, "dead", "b")
    assert await coord.take_update(BOT, 1, "dead", "b")
    assert not await coord.take_update(BOT, 1, "dead", "c")  # b won it already


class FakeService:
    """resolve_message answers from ``stored`` (message id -> floor)."""

    def __init__(self, stored: Mapping[str, int]) -> None:
        self.stored = stored
        self.asked: list[tuple[SessionKey, str]] = []

    async def resolve_message(self, key: SessionKey, platform_ref: str) -> PlatformRef | None:
        self.asked.append((key, platform_ref))
        floor = self.stored.get(platform_ref)
        if floor is None:
            return None
        return PlatformRef(branch="main", floor=floor, page=None, role="user")


class FakeDispatcher:
    """Records the updates fed to it, after the events before."""

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.fed: list[Update] = []

    async def feed_update(self, bot: Bot, update: Update, **kwargs: Any) -> None:
        self.events.append(f"feed {update.update_id}")
        self.fed.append(update)


class Ledger:
    """The dead process's updates ``orphans`` (id -> payload) in memory."""

    def __init__(self, orphans: dict[int, str]) -> None:
        self.orphans = orphans
        self.done: list[int] = []
        self.sweeps = 0
        self.third_sweep = asyncio.Event()

    async def claim_update(self, *args: Any) -> bool:
        return True

    async def earlier_pending(self, *args: Any) -> bool:
        return False

    async def finish_update(self, bot_id: int, update_id: int, now: datetime) -> None:
        self.done.append(update_id)

    async def prune_updates(self, bot_id: int, before: datetime) -> int:
        return 0

    async def orphaned_updates(
        self, bot_id: int, owner: str, now: datetime, limit: int
    ) -> list[tuple[int, str, str]]:
        self.sweeps += 1
        if self.sweeps >= 3:
            self.third_sweep.set()
        return [(u, "dead", p) for u, p in sorted(self.orphans.items())][:limit]

    async def take_update(self, bot_id: int, update_id: int, old_owner: str, owner: str) -> bool:
        return self.orphans.pop(update_id, None) is not None


def sweep_of(ledger: Ledger, service: FakeService, events: list[str], **kw: Any) -> OrphanSweep:
    async def recover() -> None:
        events.append("recover")

    return OrphanSweep(
        SharedUpdates(ledger, bot_id=BOT, owner="b"),
        cast(Dispatcher, FakeDispatcher(events)),
        Bot(TOKEN),
        cast(RoleplayService, service),
        recover=recover,
        **kw,
    )


async def test_a_stored_message_is_marked_done_and_an_unstored_one_handled_again() -> None:
    updates = {
        1: message_update(1, 100, 11, "stored on floor 3"),
        2: message_update(2, 100, 12, "never stored"),
        3: callback_update(3, 100),
        4: message_update(4, 100, 14, "/regen"),
        5: message_update(5, 200, 15, "another chat's, never stored"),
    }
    ledger = Ledger({u: json.dumps(p) for u, p in updates.items()})
    ledger.orphans[6] = '{"update_id": "not a number"'  # unreadable: dropped, not in the way
    service = FakeService({"11": 3})
    events: list[str] = []
    sweep = sweep_of(ledger, service, events)
    assert await sweep.sweep() == [2, 5]
    await sweep.close()
    # The stored line, the button press and the command are done and not handled again.
    assert sorted(ledger.done) == [1, 3, 4, 6]
    # The dead process's turns were failed (once) before any of its chats went on.
    assert events == ["recover", "feed 2", "feed 5"]
    fed = cast(FakeDispatcher, sweep.dispatcher).fed
    assert [u.message.text for u in fed if u.message] == [
        "never stored",
        "another chat's, never stored",
    ]
    assert (SessionKey(platform="telegram", realm="100", key="100"), "11") in service.asked
    # Each taken update is this process's now: the dispatcher's claim lets it through.
    assert await sweep.shared.admit(2, 100)
    assert await sweep.shared.take_orphans() == []
    await sweep.bot.session.close()


async def test_only_role_play_lines_are_replayable() -> None:
    def parsed(data: dict[str, Any]) -> Update:
        return Update.model_validate(data)

    assert replayable(parsed(message_update(1, 100, 1, "hello"))) is not None
    assert replayable(parsed(message_update(1, 100, 1, "/new"))) is None
    assert replayable(parsed(callback_update(1, 100))) is None


async def test_the_sweep_runs_every_named_interval() -> None:
    # Well inside the default lease expiry: a dead process's update waits at most its lease
    # plus one sweep.
    assert 0 < ORPHAN_SWEEP_S < DEFAULT_LEASE_EXPIRY_S
    ledger = Ledger({})
    sweep = sweep_of(ledger, FakeService({}), [], interval_s=0.05)
    assert sweep_of(Ledger({}), FakeService({}), []).interval_s == ORPHAN_SWEEP_S
    # Counted, not timed: three sweeps take at least three intervals (a sleep is never
    # shorter than asked), however slow the machine.
    started = time.monotonic()
    task = asyncio.create_task(sweep.run())
    try:
        await ledger.third_sweep.wait()
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert time.monotonic() - started >= 3 * 0.05
    with pytest.raises(ValueError, match="positive"):
        sweep_of(ledger, FakeService({}), [], interval_s=0)
    await sweep.bot.session.close()


async def test_a_polled_update_is_claimed_with_its_payload() -> None:
    """Long polling claims in the dispatcher's middleware: the claim keeps the update too."""
    kept: list[str | None] = []

    class Keeping(Ledger):
        async def claim_update(self, *args: Any) -> bool:
            kept.append(args[5])
            return True

    shared = SharedUpdates(Keeping({}), bot_id=BOT, owner="a")
    order = OrderMiddleware(cast(ChatState, _NoState()), shared=shared)
    update = Update.model_validate(message_update(9, 100, 19, "hello"))

    async def handler(event: Any, data: dict[str, Any]) -> str:
        return "handled"

    assert await order(handler, update, {}) == "handled"
    assert len(kept) == 1 and kept[0] is not None
    assert Update.model_validate(json.loads(kept[0])) == update
    assert json.loads(kept[0])["message"]["from"]["id"] == 100  # Telegram's field names


async def test_an_update_dropped_as_another_process_s_is_handled_once_taken_over(
    storage: SqlStorage,  # noqa: F811
) -> None:
    """A new long poller receives again what the killed one had claimed: dropped as the dead
    process's then, handled once this process has taken it over, and only once."""
    coord = SqlTelegramCoordination(storage.engine)
    await lease(storage, "dead", expires_in_s=-1)
    await lease(storage, "b", expires_in_s=60)
    update = message_update(9, 100, 19, "hello")
    await claim(coord, "dead", update)
    order = OrderMiddleware(
        cast(ChatState, _NoState()), shared=SharedUpdates(coord, bot_id=BOT, owner="b")
    )
    handled: list[int] = []

    async def handler(event: Any, data: dict[str, Any]) -> None:
        handled.append(event.update_id)

    parsed = Update.model_validate(update)
    await order(handler, parsed, {})
    assert handled == []
    assert order.shared is not None
    assert [u for u, _ in await order.shared.take_orphans()] == [9]
    await order(handler, parsed, {})
    await order(handler, parsed, {})  # delivered once more: dropped
    assert handled == [9]
    ((owner, done_at),) = await rows(
        storage.engine, "SELECT owner, done_at FROM telegram_update WHERE update_id = 9"
    )
    assert owner == "b" and done_at is not None


class _NoState:
    """Just enough chat state for OrderMiddleware around one update of a chat."""

    def __init__(self) -> None:
        from adapters.telegram.inbox import Inbox

        self.inbox = Inbox()
        self._lock = asyncio.Lock()

        self.seen: set[int] = set()

    def first_sight(self, update_id: int) -> bool:
        if update_id in self.seen:
            return False
        self.seen.add(update_id)
        return True

    def ordered(self, chat_id: int) -> asyncio.Lock:
        return self._lock


# ----------------------------------------------------------------------- real processes

PROCESS_LEASE_HEARTBEAT_S = 0.5
PROCESS_LEASE_EXPIRY_S = 5
"""Short, so the test sees the killed process's lease expire; the sweep's period is the
named default."""
ANSWER_WAIT_S = 90.0
"""Upper bound for something the test waits for (never a speed claim)."""
SLOW_TEXT = " ".join(f"w{n}" for n in range(240))
"""The first message's reply, streamed for about 30 s (8 characters every 0.12 s)."""
FIRST, SECOND, THIRD = "orphan first", "orphan second", "orphan third"
NOTICE = f"⚠️ {INTERRUPTED_LINE}"
FLOORS = (
    "select f.seq, f.state from floor f join message m on m.floor_id = f.id "
    "where m.role = 'user' and m.raw = :raw"
)
CLAIM = "select owner, payload, done_at from telegram_update where update_id = :u"


def slow_first(body: Mapping[str, Any]) -> FakeResponse:
    """The first message gets the slow reply; everything else the echo."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            if message.get("content") == FIRST:
                return FakeReply(text=SLOW_TEXT, chunk_chars=8, chunk_delay_s=0.12)
            break
    return echo_responder(body)


@pytest.mark.timeout(280)
async def test_a_message_queued_in_a_killed_process_is_answered_once_by_the_other(
    tmp_path: Path,
    pg_database: str,  # noqa: F811
) -> None:
    engine = database(pg_database)
    async with (
        FakeTelegramServer(token=TOKEN, max_lifetime_s=270.0) as tg,
        FakeOpenAIServer(max_requests=200, lifetime_s=270.0, responder=slow_first) as llm,
    ):
        cluster = Cluster(tmp_path, pg_database, tg, llm)
        setting = (
            f"lease_heartbeat_s = {PROCESS_LEASE_HEARTBEAT_S}\n"
            f"lease_expiry_s = {PROCESS_LEASE_EXPIRY_S}"
        )
        try:
            procs = await cluster.start_webhooks(database=setting)
            killed, live = procs
            dead = False
            # Everything goes to the first process until it is dead, then to the other.
            tg.balance([p.url for p in procs], lambda update: 1 if dead else 0)
            user, other = tg.new_user("User"), tg.new_user("Other")
            chat, other_chat = tg.private_chat(user), tg.private_chat(other)
            await tg.send_text(chat, user, FIRST)
            await wait_until(
                lambda: bool(tg.calls_of("sendMessageDraft", chat_id=chat["id"])),
                wait_s=ANSWER_WAIT_S,
                what="the first message's reply streaming",
            )
            await tg.send_text(chat, user, SECOND)
            second = tg.updates_sent[-1]["update_id"]
            # The killed process claimed (and acknowledged) the second message, with its
            # payload, and queued it behind the first one's turn.
            await wait_until(
                lambda: second in tg.webhook_posts,
                wait_s=ANSWER_WAIT_S,
                what="the second message acknowledged",
            )
            ((owner_a, payload, done_at),) = await rows(engine, CLAIM, u=second)
            assert json.loads(payload)["message"]["text"] == SECOND and done_at is None
            assert models_asked(llm, SECOND) == []

            killed.proc.kill()  # not reaped yet: a zombie, its process id still taken
            dead = True
            (expires_at,) = (
                await rows(
                    engine, "select expires_at from process_lease where owner = :o", o=owner_a
                )
            )[0]
            assert expires_at > datetime.now(UTC)
            # The live process serves on meanwhile.
            await tg.send_text(other_chat, other, "meanwhile")
            await wait_until(
                lambda: replies(tg, other_chat["id"]) == ["echo: meanwhile"],
                wait_s=ANSWER_WAIT_S,
                what="the live process answering another chat",
            )
            answered_at: list[datetime] = []

            def answered() -> bool:
                if f"echo: {SECOND}" in replies(tg, chat["id"]):
                    answered_at.append(datetime.now(UTC))
                    return True
                return False

            await wait_until(answered, wait_s=ANSWER_WAIT_S, what="the second message answered")
            # Not before the killed process's lease had expired: till then it was its.
            assert answered_at[0] >= expires_at
            await wait_until(
                lambda: NOTICE in replies(tg, chat["id"]),
                wait_s=ANSWER_WAIT_S,
                what="the chat told that the first reply was interrupted",
            )

            async def first_failed() -> bool:
                return [tuple(r) for r in await rows(engine, FLOORS, raw=FIRST)] == [(1, "failed")]

            await eventually(first_failed, wait_s=ANSWER_WAIT_S, what="the first floor failed")
            assert [tuple(r) for r in await rows(engine, FLOORS, raw=SECOND)] == [(2, "committed")]

            async def second_done() -> bool:
                ((owner, _, done_at),) = await rows(engine, CLAIM, u=second)
                return owner != owner_a and done_at is not None

            await eventually(second_done, wait_s=ANSWER_WAIT_S, what="the second marked done")
            # The chat plays on; nothing was answered twice, each model asked once.
            await tg.send_text(chat, user, THIRD)
            await wait_until(
                lambda: f"echo: {THIRD}" in replies(tg, chat["id"]),
                wait_s=ANSWER_WAIT_S,
                what="the third message answered",
            )
            shown = replies(tg, chat["id"])
            assert sorted(shown) == sorted([NOTICE, f"echo: {SECOND}", f"echo: {THIRD}"])
            assert shown[-1] == f"echo: {THIRD}"
            assert models_asked(llm, FIRST) == [killed.name]
            assert models_asked(llm, SECOND) == [live.name]
            assert models_asked(llm, THIRD) == [live.name]
            claims = "select update_id, owner, done_at from telegram_update"

            async def all_done() -> bool:
                return all(c.done_at is not None for c in await rows(engine, claims))

            # The first message's update too: the killed process's, taken over, already stored.
            await eventually(all_done, wait_s=ANSWER_WAIT_S, what="every update marked done")
            assert all(c.owner != owner_a for c in await rows(engine, claims))
            assert len(await rows(engine, claims)) == 4
            assert "handled here" in live.output()
            assert await cluster.stop(live) == 0, live.output()
        finally:
            await cluster.close()
            await engine.dispose()
