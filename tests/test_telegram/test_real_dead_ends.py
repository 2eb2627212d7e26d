"""No dead ends on Telegram (issue 13), on the real engine: a failed turn shows its error where
the reply would have been, with 🔄 under it; the user's message stays in the history; the
button, a 🔄 reaction or ``/regen`` retries the floor as a new page of the same floor."""

from __future__ import annotations

import asyncio

import pytest

from engine.turns.api import MAIN_BRANCH
from tests.fakes.openai_server import FakeError, FakeReply
from tests.fakes.telegram.methods import FakeMessage
from tests.test_telegram.real_engine import RealHarness, button, real, set_variable, telegram_key

__all__ = ["real"]
pytestmark = pytest.mark.timeout(90)

EMPTY = FakeReply(text="")
"""An empty completion: no text, no tool call."""


def counter(msg: FakeMessage) -> str:
    """The ``n/m`` page counter under a reply ("" without one: no keyboard, or 🔄 alone)."""
    rows = msg.reply_markup["inline_keyboard"] if msg.reply_markup else []
    return next((b["text"] for row in rows for b in row if "/" in b["text"]), "")


def _ellipsis_left(real: RealHarness, chat_id: int) -> bool:
    return any(t.strip() in ("…", "") for t in real.texts(chat_id))


async def test_an_empty_completion_shows_its_error_and_the_button_retries_it(
    real: RealHarness,
) -> None:
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    key = telegram_key(chat)
    llm.script(EMPTY)
    await tg.send_text(chat, ann, "Hello?")
    failed = await real.wait_text(chat["id"], lambda t: t.startswith("⚠️"))
    assert failed.text == "⚠️ The turn failed: the model returned no text"
    assert counter(failed) == ""  # no page to swipe to: 🔄 alone
    retry = button(failed, "🔄")
    assert not _ellipsis_left(real, chat["id"])
    history = await real.svc.history(key, MAIN_BRANCH)
    assert [(v.floor, v.failed, v.text) for v in history] == [(1, True, "Hello?")]

    await tg.press(chat, ann, failed.message_id, retry)
    await tg.wait_until(lambda: counter(failed) != "")  # the finished reply has its keyboard
    assert failed.text == "Reply 1: Hello?"  # the retry answers the kept input, in place
    assert counter(failed) == "1/1"
    assert not _ellipsis_left(real, chat["id"])
    view = (await real.svc.history(key, MAIN_BRANCH))[-1]
    assert (view.floor, view.failed, view.text) == (1, False, "Reply 1: Hello?")
    assert len(await real.svc.history(key, MAIN_BRANCH)) == 1  # the same floor
    # the conversation goes on after it
    after = await real.reply_to(chat, ann, "And now?")
    assert after.text == "Reply 2: And now?"


async def test_a_reaction_and_regen_retry_a_failed_floor(real: RealHarness) -> None:
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    key = telegram_key(chat)
    await real.reply_to(chat, ann, "one")
    llm.script(FakeError(status=500))
    await tg.send_text(chat, ann, "two")
    failed = await real.wait_text(chat["id"], lambda t: t.startswith("⚠️"))
    assert button(failed, "🔄")
    assert [(v.floor, v.failed) for v in await real.svc.history(key, MAIN_BRANCH)] == [
        (1, False),
        (2, True),
    ]

    # a 🔄 reaction retries (here it fails again: the same error, the button still there)
    llm.script(FakeError(status=500))
    await tg.react(chat, ann, failed.message_id, "🔄")
    await llm.wait_requests(3)
    await llm.wait_done(2)
    # /regen retries too, after the reaction's turn (one chat's updates run in order)
    await tg.send_text(chat, ann, "/regen")
    await tg.wait_until(lambda: counter(failed) != "")  # the finished reply has its keyboard
    assert failed.text == "Reply 2: two" and counter(failed) == "1/1"
    assert len(llm.chat_requests) == 4
    assert [t for t in real.texts(chat["id"]) if t.startswith("⚠️")] == []
    views = await real.svc.history(key, MAIN_BRANCH)
    assert [(v.floor, v.failed) for v in views] == [(1, False), (2, False)]


async def test_a_failed_regeneration_keeps_the_swipe_row(real: RealHarness) -> None:
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    reply = await real.reply_to(chat, ann, "Hi")
    assert reply.text == "Reply 1: Hi"
    llm.script(EMPTY)
    await tg.press(chat, ann, reply.message_id, button(reply, "🔄"))
    await tg.wait_until(lambda: (reply.text or "").startswith("⚠️"))
    assert reply.text == "⚠️ Regenerating failed: the model returned no text"
    assert counter(reply) == "1/1"  # the floor keeps its one page
    await tg.press(chat, ann, reply.message_id, button(reply, "◀️"))
    await tg.wait_until(lambda: reply.text == "Reply 1: Hi")
    await tg.press(chat, ann, reply.message_id, button(reply, "🔄"))
    await tg.wait_until(lambda: counter(reply) == "2/2")
    assert reply.text == "Reply 2: Hi"


async def test_in_a_group_a_reply_cut_mid_stream_gives_way_to_its_error(
    real: RealHarness,
) -> None:
    tg, llm = real.tg, real.llm
    owner = tg.new_user("Olga")
    group = tg.group("Tavern", owner=owner)
    await real.ask(group, owner, "/start", "Session ready")
    hold = asyncio.Event()
    cut = FakeReply(text="Once upon a time", chunk_chars=5, hold=hold, error_after_chunks=2)
    llm.script(cut)
    await tg.send_text(group, owner, "Tell me a story")
    partial = await real.wait_text(group["id"], lambda t: "Once" in t)  # streamed by edits
    hold.set()  # the stream goes on, then breaks off with a server error
    await tg.wait_until(lambda: (partial.text or "").startswith("⚠️"))
    assert button(partial, "🔄") and counter(partial) == ""
    assert not any("Once" in t for t in real.texts(group["id"]))
    assert not _ellipsis_left(real, group["id"])


async def test_a_tool_call_that_was_not_offered_fails_the_page_and_is_not_run(
    real: RealHarness,
) -> None:
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    llm.script(set_variable("mood", "sly"))  # tools are off by default: not offered
    await tg.send_text(chat, ann, "Hi")
    failed = await real.wait_text(chat["id"], lambda t: t.startswith("⚠️"))
    assert failed.text == "⚠️ The turn failed: the model returned no text"
    assert "tools" not in llm.chat_requests[-1].body
    assert "mood" not in await real.variables(chat)
    await tg.press(chat, ann, failed.message_id, button(failed, "🔄"))
    await tg.wait_until(lambda: counter(failed) == "1/1")
    assert failed.text == "Reply 1: Hi" and "mood" not in await real.variables(chat)
