"""Replies: streamed through drafts or edits, split at 4096 UTF-16 units, valid HTML, keyboards."""

from __future__ import annotations

import json

from tests.fakes.telegram.html_check import utf16_len, visible_text
from tests.test_telegram.conftest import Harness


def _keyboard_texts(markup: dict | None) -> list[str]:
    if not markup:
        return []
    return [b["text"] for row in markup["inline_keyboard"] for b in row]


async def test_private_reply_streams_through_drafts_and_carries_the_keyboard(
    harness: Harness,
) -> None:
    alice, chat = await harness.start_private()
    srv = harness.server
    await srv.send_text(chat, alice, "Tell me <everything> & more")
    reply = await harness.wait_text(chat["id"], lambda t: "everything" in t)
    assert reply.text == "Seraphina: I hear you. You said: Alice: Tell me <everything> & more"
    assert "&lt;everything&gt; &amp; more" in reply.html
    assert _keyboard_texts(reply.reply_markup) == ["◀️", "1/1", "▶️", "🔄"]
    drafts = srv.world.drafts[chat["id"]]
    assert len(drafts) >= 1 and all(visible_text(d) for d in drafts)
    assert srv.calls_of("sendChatAction", chat_id=chat["id"], action="typing")
    assert len(harness.texts(chat["id"])) == 1  # drafts are not messages


async def test_group_reply_is_edited_in_place_and_prefixed_with_the_character(
    harness: Harness,
) -> None:
    await harness.start()
    srv = harness.server
    owner, bob = srv.new_user("Olga"), srv.new_user("Bob")
    group = srv.group("Tavern", owner=owner, members=(bob,))
    await srv.send_text(group, owner, "/start")
    await harness.wait_text(group["id"], lambda t: t.startswith("Session ready"))
    await srv.send_text(group, bob, "Hi all")
    reply = await harness.wait_text(group["id"], lambda t: "Hi all" in t and t[0] != "…")
    await srv.wait_until(lambda: reply.reply_markup is not None)
    assert reply.text.startswith("Seraphina\nSeraphina: I hear you")
    assert reply.html.startswith("<b>Seraphina</b>\n")
    assert reply.edits >= 1  # streamed by editing (no drafts in groups)
    assert not srv.world.drafts.get(group["id"])
    assert reply.reply_to is not None
    assert _keyboard_texts(reply.reply_markup)[1] == "1/1"


async def test_unbound_group_stays_quiet(harness: Harness) -> None:
    await harness.start()
    srv = harness.server
    owner = srv.new_user("Olga")
    group = srv.group("Quiet", owner=owner)
    await srv.send_text(group, owner, "anyone?")
    await srv.send_text(group, owner, "/vars")
    notice = await harness.wait_text(group["id"], lambda t: "no session yet" in t)
    assert notice is not None
    assert harness.texts(group["id"]) == [notice.text]


async def test_a_5000_character_reply_arrives_as_two_messages_of_valid_html(
    harness: Harness,
) -> None:
    paragraph = "The *old* tavern & its <keeper> waited. " * 25  # ~1000 chars, with markup
    long_text = "\n\n".join([paragraph.strip()] * 5)
    assert len(long_text) > 5000
    harness.service.reply_for = lambda character, lines, page: long_text
    alice, chat = await harness.start_private()
    srv = harness.server
    await srv.send_text(chat, alice, "Go on")
    await harness.wait_split_reply(chat["id"], 2)
    first, second = srv.bot_messages(chat["id"])
    for msg in (first, second):
        assert msg.parse_mode == "HTML"
        assert visible_text(msg.html) == msg.text  # the fake parsed it: valid HTML
        assert utf16_len(msg.text) <= 4096
        assert "<i>old</i>" in msg.html and "&lt;keeper&gt;" in msg.html
    assert first.reply_markup is None and second.reply_markup is not None
    # Split on a paragraph boundary: nothing lost, nothing doubled.
    assert first.text.replace("*", "") + "\n\n" + second.text == long_text.replace("*", "")


async def test_long_reply_in_emoji_is_split_by_utf16_units(harness: Harness) -> None:
    harness.service.reply_for = lambda character, lines, page: "😀" * 3000  # 6000 units
    alice, chat = await harness.start_private()
    srv = harness.server
    await srv.send_text(chat, alice, "smile")
    await harness.wait_split_reply(chat["id"], 2)
    texts = harness.texts(chat["id"])
    assert "".join(texts) == "😀" * 3000
    assert all(utf16_len(t) <= 4096 for t in texts)


async def test_keyboard_moves_to_the_newest_reply(harness: Harness) -> None:
    alice, chat = await harness.start_private()
    srv = harness.server
    await srv.send_text(chat, alice, "one")
    first = await harness.wait_text(chat["id"], lambda t: t.endswith("one"))
    await srv.send_text(chat, alice, "two")
    second = await harness.wait_text(chat["id"], lambda t: t.endswith("two"))
    await srv.wait_until(lambda: first.reply_markup is None)
    assert second.reply_markup is not None
    # Both replies and the user's messages are linked to their floors.
    key = next(iter(harness.service.sessions))
    ref = await harness.service.resolve_message(key, str(first.message_id))
    assert (ref.floor, ref.role) == (1, "assistant")


async def test_failed_turn_says_so(harness: Harness) -> None:
    alice, chat = await harness.start_private()
    srv = harness.server
    harness.service.fail_next = True
    await srv.send_text(chat, alice, "hello?")
    failed = await harness.wait_text(chat["id"], lambda t: "failed" in t)
    assert "the model failed" in failed.text
    assert json.dumps(failed.reply_markup) == "null"


async def test_a_reply_deleted_by_the_user_is_sent_again_on_regenerate(harness: Harness) -> None:
    alice, chat = await harness.start_private()
    srv = harness.server
    await srv.send_text(chat, alice, "Hi")
    reply = await harness.wait_text(chat["id"], lambda t: t.endswith("Hi"))
    await srv.wait_until(lambda: reply.reply_markup is not None)
    reply.deleted = True  # the user deleted it in the app
    await srv.send_text(chat, alice, "/regen")
    again = await harness.wait_text(chat["id"], lambda t: t.endswith("(take 2)"))
    await srv.wait_until(lambda: again.reply_markup is not None)
    assert again.message_id != reply.message_id
    assert _keyboard_texts(again.reply_markup)[1] == "2/2"
