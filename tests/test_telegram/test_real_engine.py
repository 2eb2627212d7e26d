"""Issue 8's "Must show" on the real engine: replies, swipes and /vars, long replies.

Real aiogram -> fake Bot API -> TelegramRunner -> TavernService -> SQLite file -> the openai
client -> fake OpenAI server (see :mod:`tests.test_telegram.real_engine`).
"""

from __future__ import annotations

import pytest

from engine.turns.api import MAIN_BRANCH
from tests.fakes.openai_server import FakeReply
from tests.fakes.telegram.html_check import utf16_len, visible_text
from tests.test_telegram.real_engine import (
    RealHarness,
    button,
    counter,
    real,
    set_variable,
    telegram_key,
)

__all__ = ["real"]
pytestmark = pytest.mark.timeout(90)


async def test_a_private_message_gets_a_streamed_reply_with_the_swipe_keyboard(
    real: RealHarness,
) -> None:
    tg = real.tg
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    reply = await real.reply_to(chat, ann, "Hello there")
    assert reply.text == "Reply 1: Hello there"
    assert counter(reply) == "1/1"
    # streamed: drafts (private chat) showed the text growing before the final message
    drafts = [c.params["text"] for c in tg.calls_of("sendMessageDraft")]
    assert drafts and drafts[0] != reply.text and reply.text.startswith(drafts[0])
    assert tg.calls_of("sendChatAction", action="typing")
    # the turn is in the database: floor 1 of main, committed with the reply
    history = await real.svc.history(telegram_key(chat), MAIN_BRANCH)
    assert [(v.floor, v.text) for v in history] == [(1, "Reply 1: Hello there")]
    # the prompt the model got carried the user's message
    assert real.llm.chat_requests[-1].last_user_text == "Hello there"


async def test_buttons_regenerate_and_swipe_and_the_vars_view_follows_the_page(
    real: RealHarness,
) -> None:
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    await tg.send_text(chat, ann, "/start")
    await real.wait_text(chat["id"], lambda t: t.startswith("Session ready"))
    await real.svc.configure(telegram_key(chat), tools={"enabled": True})

    llm.script(set_variable("mood", "happy"), FakeReply(text="She smiles."))
    reply = await real.reply_to(chat, ann, "Hi")
    assert reply.text == "She smiles." and counter(reply) == "1/1"
    assert "mood = happy" in await real.ask(chat, ann, "/vars", "Variables")

    llm.script(set_variable("mood", "grim"), FakeReply(text="She frowns."))
    await tg.press(chat, ann, reply.message_id, button(reply, "🔄"))
    await tg.wait_until(lambda: counter(reply) == "2/2")
    assert reply.text == "She frowns."
    assert "mood = grim" in await real.ask(chat, ann, "/vars", "Variables")

    await tg.press(chat, ann, reply.message_id, button(reply, "◀️"))
    await tg.wait_until(lambda: counter(reply) == "1/2")
    assert reply.text == "She smiles."
    shown = await real.ask(chat, ann, "/vars", "Variables")
    assert shown == "Variables (merged view, branch main):\nmood = happy"
    assert (await real.variables(chat))["mood"] == "happy"

    await tg.press(chat, ann, reply.message_id, button(reply, "▶️"))
    await tg.wait_until(lambda: counter(reply) == "2/2")
    assert reply.text == "She frowns."
    assert "mood = grim" in await real.ask(chat, ann, "/vars", "Variables")

    # ▶️ on the last page regenerates (a third page, its own write)
    llm.script(set_variable("mood", "calm"), FakeReply(text="She breathes."))
    await tg.press(chat, ann, reply.message_id, button(reply, "▶️"))
    await tg.wait_until(lambda: counter(reply) == "3/3")
    assert reply.text == "She breathes."
    assert "mood = calm" in await real.ask(chat, ann, "/vars branch", "Variables")
    # the reply was edited in place every time, never sent again
    replies = [t for t in real.texts(chat["id"]) if t.startswith("She ")]
    assert replies == ["She breathes."]
    view = (await real.svc.history(telegram_key(chat), MAIN_BRANCH))[-1]
    assert (view.page, view.pages, view.text) == (3, 3, "She breathes.")


async def test_a_5000_character_reply_arrives_as_two_messages_with_valid_html(
    real: RealHarness,
) -> None:
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    paragraph = "She walks *slowly* to the <door> & waits. " * 20  # HTML-special characters
    text = "\n\n".join([paragraph.strip()] * 6)
    assert 4096 < len(text) <= 5200
    llm.script(FakeReply(text=text, chunk_chars=400))
    await tg.send_text(chat, ann, "Tell me a long story")
    await tg.wait_until(
        lambda: (
            len(real.texts(chat["id"])) == 2
            and tg.bot_messages(chat["id"])[-1].reply_markup is not None
        ),
        wait_s=20.0,
    )
    first, second = tg.bot_messages(chat["id"])
    for message in (first, second):
        assert message.html is not None
        visible = visible_text(message.html)  # raises if Telegram could not parse it
        assert utf16_len(visible) <= 4096
        assert "<door> & waits" in visible and "<i>slowly</i>" in message.html
    assert first.reply_markup is None and counter(second) == "1/1"
    joined = (first.text or "") + "\n\n" + (second.text or "")
    assert joined.replace("*", "").split() == text.replace("*", "").split()
    stored = (await real.svc.history(telegram_key(chat), MAIN_BRANCH))[-1]
    assert stored.text == text
