"""A Telegram chat is told once that its reply was interrupted (issue 19): a floor left
``generating`` by a process whose lease expired is failed by the sweep of a live process, and
the chat gets one message saying so (with 🔄, which retries the floor); a floor whose owner's
lease stands gets none. Two "processes" (two services on one database, each with its own
notices) sweep at the same time: the compare-and-set lets exactly one of them fail the floor,
and only that one tells the chat.

Real aiogram against the loopback fake Bot API, the real engine on an SQLite file.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from adapters.telegram.runner import INTERRUPTED_LINE
from engine.timeline.service import INTERRUPTED
from engine.turns.api import MAIN_BRANCH
from tests.test_scale.interrupted_support import generating, generating_ids, lease, sweeper
from tests.test_telegram.real_engine import RealHarness, real, telegram_key

__all__ = ["real"]
pytestmark = pytest.mark.timeout(90)

NOTICE = f"⚠️ {INTERRUPTED_LINE}"


async def test_the_chat_of_a_dead_owner_floor_is_told_once_and_a_live_one_not(
    real: RealHarness,
) -> None:
    tg = real.tg
    ann, bob = tg.new_user("Ann"), tg.new_user("Bob")
    dead_chat, live_chat = tg.private_chat(ann), tg.private_chat(bob)
    await real.reply_to(dead_chat, ann, "hello")
    await real.reply_to(live_chat, bob, "hello")
    storage = real.storage
    assert storage is not None
    now = datetime.now(UTC)
    await lease(storage, "dead-owner", renewed_at=now - timedelta(hours=1))
    await lease(storage, "live-owner", renewed_at=now)
    await generating(storage, telegram_key(dead_chat), "lost words", owner="dead-owner")
    live = await generating(storage, telegram_key(live_chat), "still coming", owner="live-owner")
    before = {c["id"]: len(tg.bot_messages(c["id"])) for c in (dead_chat, live_chat)}

    assert real.runner is not None
    tell = real.runner.tell_interrupted  # any process may send to any chat
    first, first_notices = sweeper(storage, "telegram", tell)
    second, second_notices = sweeper(storage, "telegram", tell)
    runs = [
        asyncio.create_task(first_notices.run(), name="notices-1"),
        asyncio.create_task(second_notices.run(), name="notices-2"),
    ]
    try:
        failed = await asyncio.gather(first.sweep(), second.sweep())
        assert sorted(len(f) for f in failed) == [0, 1]  # the compare-and-set chose one
        assert [f.error for f in failed[0] + failed[1]] == [INTERRUPTED]
        notice = await real.wait_text(dead_chat["id"], lambda t: t == NOTICE)
        # Later sweeps by either process find nothing more to fail or tell.
        assert await first.sweep() == [] and await second.sweep() == []
        await asyncio.sleep(0.5)  # a second notice would have had time to arrive
    finally:
        for task in runs:
            task.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
    texts = [m.text for m in tg.bot_messages(dead_chat["id"])]
    assert texts.count(NOTICE) == 1
    assert len(texts) == before[dead_chat["id"]] + 1
    assert len(tg.bot_messages(live_chat["id"])) == before[live_chat["id"]]
    assert live in await generating_ids(storage)  # the live owner's floor goes on

    # The notice carries 🔄, which retries the interrupted floor into it.
    assert notice.reply_markup is not None
    retry = notice.reply_markup["inline_keyboard"][0][0]
    assert retry["text"] == "🔄"
    await tg.press(dead_chat, ann, notice.message_id, retry["callback_data"])
    await tg.wait_until(lambda: str(notice.text).endswith(": lost words"))
    history = await real.svc.history(telegram_key(dead_chat), MAIN_BRANCH)
    assert [(v.floor, v.failed, v.text) for v in history][-1] == (2, False, notice.text)
