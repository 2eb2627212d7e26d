"""Swipes: 🔄 and ◀️/▶️ buttons and 🔄/👎 reactions change the text and the /vars view."""

from __future__ import annotations

from tests.fakes.telegram.methods import FakeMessage
from tests.test_telegram.conftest import Harness


def _button(msg: FakeMessage, text: str) -> str:
    for row in msg.reply_markup["inline_keyboard"]:
        for button in row:
            if button["text"] == text:
                return button["callback_data"]
    raise AssertionError(f"no {text} button on {msg.reply_markup}")


def _counter(msg: FakeMessage) -> str:
    return msg.reply_markup["inline_keyboard"][0][1]["text"] if msg.reply_markup else ""


async def _first_reply(harness: Harness) -> tuple[dict, dict, FakeMessage]:
    alice, chat = await harness.start_private()
    srv = harness.server
    await srv.send_text(chat, alice, "Hello")
    reply = await harness.wait_text(chat["id"], lambda t: t.endswith("Hello"))
    await srv.wait_until(lambda: reply.reply_markup is not None)
    return alice, chat, reply


async def test_buttons_regenerate_and_swipe_and_the_vars_view_follows(harness: Harness) -> None:
    alice, chat, reply = await _first_reply(harness)
    srv = harness.server
    # Page 1 writes a page-scoped variable; page 2 will not have it.
    await srv.send_text(chat, alice, "/setvar mood happy page")
    await harness.wait_text(chat["id"], lambda t: t.startswith("Set mood"))

    query = await srv.press(chat, alice, reply.message_id, _button(reply, "🔄"))
    await srv.wait_until(lambda: _counter(reply) == "2/2")
    assert reply.text.endswith("(take 2)")
    assert srv.world.callbacks[query] is True  # the press was answered

    await srv.send_text(chat, alice, "/vars")
    view = await harness.wait_text(chat["id"], lambda t: t.startswith(("Variables", "No var")))
    assert "mood" not in view.text

    await srv.press(chat, alice, reply.message_id, _button(reply, "◀️"))
    await srv.wait_until(lambda: _counter(reply) == "1/2")
    assert reply.text.endswith("Hello") and "take" not in reply.text
    await srv.send_text(chat, alice, "/vars")
    shown = await harness.wait_text(
        chat["id"], lambda t: t.startswith("Variables") and "mood" in t
    )
    assert shown.text == "Variables (merged view, branch main):\nmood = happy"

    await srv.press(chat, alice, reply.message_id, _button(reply, "▶️"))
    await srv.wait_until(lambda: _counter(reply) == "2/2")
    assert reply.text.endswith("(take 2)")
    # ▶️ on the last page regenerates, like SillyTavern.
    await srv.press(chat, alice, reply.message_id, _button(reply, "▶️"))
    await srv.wait_until(lambda: _counter(reply) == "3/3")
    assert reply.text.endswith("(take 3)")
    assert len(harness.texts(chat["id"])) == 4  # the reply was edited in place, never re-sent


async def test_counter_button_answers_with_the_page(harness: Harness) -> None:
    alice, chat, reply = await _first_reply(harness)
    srv = harness.server
    await srv.press(chat, alice, reply.message_id, _button(reply, "1/1"))
    answered = await srv.wait_for("answerCallbackQuery")
    assert answered.params["text"] == "Page 1 of 1."


async def test_reactions_regenerate_the_latest_reply_only(harness: Harness) -> None:
    alice, chat, first = await _first_reply(harness)
    srv = harness.server
    await srv.react(chat, alice, first.message_id, "👎")
    await srv.wait_until(lambda: _counter(first) == "2/2")
    assert first.text.endswith("(take 2)")

    await srv.send_text(chat, alice, "Again")
    second = await harness.wait_text(chat["id"], lambda t: t.endswith("Again"))
    await srv.wait_until(lambda: second.reply_markup is not None and first.reply_markup is None)
    await srv.react(chat, alice, first.message_id, "🔄")  # an older reply: ignored
    await srv.react(chat, alice, second.message_id, "❤")  # not a regenerate emoji: ignored
    await srv.react(chat, alice, second.message_id, "🔄")
    await srv.wait_until(lambda: _counter(second) == "2/2")
    regenerations = [c for c in harness.service.calls if c[0] == "regenerate"]
    assert len(regenerations) == 2
    assert first.reply_markup is None


async def test_swiping_between_a_long_and_a_short_page_adds_and_removes_messages(
    harness: Harness,
) -> None:
    long_page = "\n\n".join(["A long first answer. " * 40] * 6)
    harness.service.reply_for = lambda character, lines, page: long_page if page == 1 else "Short."
    alice, chat = await harness.start_private()
    srv = harness.server
    await srv.send_text(chat, alice, "Talk")
    await harness.wait_split_reply(chat["id"], 2)
    head, tail = srv.bot_messages(chat["id"])
    await srv.press(chat, alice, tail.message_id, _button(tail, "🔄"))
    await srv.wait_until(lambda: head.text == "Short." and tail.deleted)
    assert _counter(head) == "2/2"
    await srv.press(chat, alice, head.message_id, _button(head, "◀️"))
    await srv.wait_until(
        lambda: (
            len(harness.texts(chat["id"])) == 2
            and _counter(srv.bot_messages(chat["id"])[-1]) == "1/2"
        )
    )
    first, second = srv.bot_messages(chat["id"])
    assert first is head and first.reply_markup is None
    assert (first.text + "\n\n" + second.text).split() == long_page.split()
