"""The fake Bot API itself: payloads parse in aiogram, long polling never loses or repeats."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import TelegramBadRequest, TelegramRetryAfter
from aiogram.types import Update

from tests.fakes.telegram import FakeTelegramServer, builders
from tests.fakes.telegram.html_check import HtmlParseError, visible_text


@pytest.fixture
async def srv():
    async with FakeTelegramServer(max_lifetime_s=30) as server:
        yield server


@pytest.fixture
async def bot(srv):
    session = AiohttpSession(api=TelegramAPIServer.from_base(srv.base_url))
    client = Bot(srv.token, session=session)
    yield client
    await session.close()


def test_builders_parse_in_aiogram() -> None:
    alice = builders.user(7, "Alice")
    group = builders.chat(-100, "supergroup", title="G", forum=True)
    msg = builders.message(
        message_id=1,
        date=int(time.time()),
        chat_obj=group,
        sender=alice,
        text="/vars chat",
        thread_id=5,
    )
    doc = builders.document("f1", "card.json", "application/json", 10)
    payloads = [
        {"update_id": 1, "message": msg},
        {"update_id": 2, "callback_query": builders.callback_query("q", alice, msg, "x")},
        {
            "update_id": 3,
            "message_reaction": builders.reaction_update(
                chat_obj=group, message_id=1, sender=alice, date=1, new=("👎",)
            ),
        },
        {"update_id": 4, "message": {**msg, "document": doc}},
    ]
    updates = [Update.model_validate(p) for p in payloads]
    assert updates[0].message.is_topic_message and updates[0].message.message_thread_id == 5
    assert updates[1].callback_query.data == "x"
    assert updates[2].message_reaction.new_reaction[0].emoji == "👎"
    assert updates[3].message.document.file_name == "card.json"


@pytest.mark.parametrize(
    ("markup", "visible"),
    [("<b>a</b> &amp; <i>b</i>", "a & b"), ("x &lt;y&gt;", "x <y>"), ("plain", "plain")],
)
def test_html_checker_accepts_valid_markup(markup: str, visible: str) -> None:
    assert visible_text(markup) == visible


@pytest.mark.parametrize(
    "markup", ["<b>a", "a</b>", "<x>a</x>", "a < b", "fish & chips", "<b><i>a</b></i>"]
)
def test_html_checker_rejects_what_telegram_rejects(markup: str) -> None:
    with pytest.raises(HtmlParseError):
        visible_text(markup)


async def test_polling_offsets_confirm_and_never_repeat(srv, bot) -> None:
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    await srv.send_text(chat, alice, "one")
    await srv.send_text(chat, alice, "two")
    first = await bot.get_updates(timeout=0)
    assert [u.message.text for u in first] == ["one", "two"]
    again = await bot.get_updates(timeout=0)
    assert [u.update_id for u in again] == [u.update_id for u in first]  # not confirmed yet
    confirmed = await bot.get_updates(offset=first[-1].update_id + 1, timeout=0)
    assert confirmed == []
    waiter = asyncio.create_task(bot.get_updates(offset=first[-1].update_id + 1, timeout=2))
    await asyncio.sleep(0.05)
    await srv.send_text(chat, alice, "three")
    late = await waiter
    assert [u.message.text for u in late] == ["three"]


async def test_reactions_need_opt_in(srv, bot) -> None:
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    sent = await bot.send_message(chat["id"], "hi")
    await srv.react(chat, alice, sent.message_id, "👎")
    assert await bot.get_updates(timeout=0) == []
    await srv.react(chat, alice, sent.message_id, "👎")
    got = await bot.get_updates(timeout=0, allowed_updates=["message", "message_reaction"])
    assert len(got) == 1 and got[0].message_reaction is not None


async def test_send_rules_and_scripted_429(srv, bot) -> None:
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    with pytest.raises(TelegramBadRequest, match="can't parse entities"):
        await bot.send_message(chat["id"], "<b>broken", parse_mode="HTML")
    with pytest.raises(TelegramBadRequest, match="message is too long"):
        await bot.send_message(chat["id"], "x" * 4097)
    sent = await bot.send_message(chat["id"], "😀" * 2048)  # 4096 UTF-16 units: allowed
    with pytest.raises(TelegramBadRequest, match="not modified"):
        await bot.edit_message_text("😀" * 2048, chat_id=chat["id"], message_id=sent.message_id)
    srv.fail_next("sendMessage", retry_after=3)
    with pytest.raises(TelegramRetryAfter) as caught:
        await bot.send_message(chat["id"], "later")
    assert caught.value.retry_after == 3
    assert (await bot.send_message(chat["id"], "now")).text == "now"
    assert srv.unhandled == []


async def test_server_stops_itself_after_its_lifetime() -> None:
    server = FakeTelegramServer(max_lifetime_s=0.1)
    await server.start()
    for _ in range(100):
        if server.stopped:
            break
        await asyncio.sleep(0.02)
    assert server.stopped
    await server.stop()


async def test_request_budget_is_enforced() -> None:
    async with FakeTelegramServer(max_requests=2) as small:
        session = AiohttpSession(api=TelegramAPIServer.from_base(small.base_url))
        client = Bot(small.token, session=session)
        await client.get_me()
        await client.get_me()
        with pytest.raises(Exception, match="limit reached"):
            await client.get_me()
        await session.close()
