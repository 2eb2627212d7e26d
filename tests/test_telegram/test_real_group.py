"""Issue 17 on Telegram, on the real engine: a group of characters in one chat.

Real aiogram -> fake Bot API -> TelegramRunner -> TavernService -> SQLite file -> the openai
client -> fake OpenAI server (see :mod:`tests.test_telegram.real_engine`). Each member's reply
is its own message starting with its name in bold, with its own keyboard.
"""

from __future__ import annotations

from typing import Any

import pytest

from adapters.telegram.routers.callbacks import OLDER_REPLY
from engine.turns.api import MAIN_BRANCH
from tests.fakes.openai_server import FakeError, FakeReply
from tests.fakes.telegram.methods import FakeMessage
from tests.test_telegram.real_engine import (
    WAIT_S,
    RealHarness,
    button,
    counter,
    real,
    telegram_key,
)
from tests.test_turns.group_support import card_bytes

__all__ = ["real"]
pytestmark = pytest.mark.timeout(90)
Json = dict[str, Any]


async def _two_members(real: RealHarness, chat: Json, sender: Json) -> None:
    """Mira (the chat's character) and Bob, added with /add; talkativeness 0, so only the
    members a message names answer it (natural order)."""
    key = telegram_key(chat)
    await real.svc.open_session(key)
    await real.svc.import_asset(key, "card", "mira.json", card_bytes("Mira", "Mira keeps."))
    await real.svc.import_asset(
        key, "card", "bob.json", card_bytes("Bob", "Bob sails."), bind=False
    )
    answer = await real.ask(chat, sender, "/add bob", "Bob joins")
    assert answer == "Bob joins the story.\nCharacters: Mira, Bob\nStrategy: natural; mode: swap"


async def _turn(real: RealHarness, chat: Json, sender: Json, text: str, count: int) -> list[Any]:
    """Say ``text`` and wait for ``count`` finished replies after it (each with its keyboard)."""
    sent = await real.tg.send_text(chat, sender, text)
    return await _replies_after(real, chat, int(sent["message_id"]), count)


async def _replies_after(real: RealHarness, chat: Json, after: int, count: int) -> list[Any]:
    def mine() -> list[FakeMessage]:
        return [m for m in real.tg.bot_messages(int(chat["id"])) if m.message_id > after]

    def done() -> bool:
        found = mine()
        return len(found) == count and all(m.reply_markup is not None for m in found)

    await real.tg.wait_until(done, wait_s=WAIT_S)
    return mine()


async def test_group_replies_each_their_own_message_named_in_bold_with_a_keyboard(
    real: RealHarness,
) -> None:
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    await _two_members(real, chat, ann)

    llm.script(FakeReply(text="The lamp is <lit> & warm."))
    (only,) = await _turn(real, chat, ann, "Mira, what do you think?", 1)
    assert only.html == "<b>Mira</b>\nThe lamp is &lt;lit&gt; &amp; warm."
    assert counter(only) == "1/1"

    # Both named: two messages in mention order, each with its own keyboard; the earlier
    # turn's reply loses its keyboard.
    llm.script(FakeReply(text="Aye, the tide turns."), FakeReply(text="Then we wait."))
    bob, mira = await _turn(real, chat, ann, "Bob and Mira, shall we sail?", 2)
    assert (bob.html, mira.html) == (
        "<b>Bob</b>\nAye, the tide turns.",
        "<b>Mira</b>\nThen we wait.",
    )
    assert (counter(bob), counter(mira)) == ("1/1", "1/1")
    assert only.reply_markup is None
    # Mira's prompt held Bob's reply, named.
    assert "Bob: Aye, the tide turns." in str(llm.chat_requests[-1].messages)

    # 🔄 on the latest reply (Mira's) regenerates only it.
    llm.script(FakeReply(text="Then we wait for dawn."))
    await tg.press(chat, ann, mira.message_id, button(mira, "🔄"))
    await tg.wait_until(lambda: counter(mira) == "2/2", wait_s=WAIT_S)
    assert mira.html == "<b>Mira</b>\nThen we wait for dawn."
    assert (bob.html, counter(bob)) == ("<b>Bob</b>\nAye, the tide turns.", "1/1")
    history = await real.svc.history(telegram_key(chat), MAIN_BRANCH)
    assert [(v.character, v.text, v.pages) for v in history[-2:]] == [
        ("Bob", "Aye, the tide turns.", 1),
        ("Mira", "Then we wait for dawn.", 2),
    ]

    # 🔄 on Bob's, an earlier reply of the latest turn: only Bob's message changes, and his
    # prompt is the story up to his reply (Mira's later one is not in it).
    llm.script(FakeReply(text="Aye, the tide is turning."))
    await tg.press(chat, ann, bob.message_id, button(bob, "🔄"))
    await tg.wait_until(lambda: counter(bob) == "2/2", wait_s=WAIT_S)
    assert bob.html == "<b>Bob</b>\nAye, the tide is turning."
    assert (mira.html, counter(mira)) == ("<b>Mira</b>\nThen we wait for dawn.", "2/2")
    assert "Then we wait" not in str(llm.chat_requests[-1].messages)
    await tg.press(chat, ann, bob.message_id, button(bob, "◀️"))
    await tg.wait_until(lambda: counter(bob) == "1/2", wait_s=WAIT_S)
    assert bob.html == "<b>Bob</b>\nAye, the tide turns."
    history = await real.svc.history(telegram_key(chat), MAIN_BRANCH)
    assert [(v.character, v.text, v.page, v.pages) for v in history[-2:]] == [
        ("Bob", "Aye, the tide turns.", 1, 2),
        ("Mira", "Then we wait for dawn.", 2, 2),
    ]
    assert counter(mira) == "2/2" and mira.reply_markup is not None
    # A 🔄 reaction on Bob's reply regenerates it the same way.
    llm.script(FakeReply(text="Aye, at the third bell."))
    await tg.react(chat, ann, bob.message_id, "🔄")
    await tg.wait_until(lambda: counter(bob) == "3/3", wait_s=WAIT_S)
    assert bob.html == "<b>Bob</b>\nAye, at the third bell."
    assert (mira.html, counter(mira)) == ("<b>Mira</b>\nThen we wait for dawn.", "2/2")
    await tg.press(chat, ann, bob.message_id, button(bob, "◀️"))
    await tg.press(chat, ann, bob.message_id, button(bob, "◀️"))
    await tg.wait_until(lambda: counter(bob) == "1/3", wait_s=WAIT_S)
    # The model fails halfway through Bob's new page: his message shows page 1 again, and the
    # error comes in a message of its own.
    llm.script(FakeReply(text="Aye, half a sentence.", chunk_chars=4, error_after_chunks=2))
    await tg.press(chat, ann, bob.message_id, button(bob, "🔄"))

    def warned() -> bool:
        return any(m.text.startswith("⚠️") for m in tg.bot_messages(int(chat["id"])))

    await tg.wait_until(warned, wait_s=WAIT_S)
    assert (bob.html, counter(bob)) == ("<b>Bob</b>\nAye, the tide turns.", "1/3")
    assert (mira.html, counter(mira)) == ("<b>Mira</b>\nThen we wait for dawn.", "2/2")

    # After a restart the adapter no longer knows the turn, and a new turn leaves Bob's reply
    # older: a press under it gets the alert, nothing regenerates and the keyboard goes.
    await real.restart()
    llm.script(FakeReply(text="Now we sail."))
    (latest,) = await _turn(real, chat, ann, "Mira, and now?", 1)
    requests = len(llm.chat_requests)
    query = await tg.press(chat, ann, bob.message_id, button(bob, "🔄"))
    await tg.wait_until(lambda: bob.reply_markup is None, wait_s=WAIT_S)
    (answer,) = tg.calls_of("answerCallbackQuery", callback_query_id=query)
    assert (answer.params["text"], answer.params["show_alert"]) == (OLDER_REPLY, True)
    assert len(llm.chat_requests) == requests and bob.text == "Bob\nAye, the tide turns."
    assert counter(latest) == "1/1"


async def test_mute_strategies_speak_members_and_info(real: RealHarness) -> None:
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    await _two_members(real, chat, ann)

    muted = await real.ask(chat, ann, "/mute BOB", "Bob is muted")
    assert muted.endswith("Characters: Mira, Bob (muted)\nStrategy: natural; mode: swap")
    llm.script(FakeReply(text="Only me."))
    (reply,) = await _turn(real, chat, ann, "Bob and Mira, hello?", 1)
    assert reply.text == "Mira\nOnly me."

    await real.ask(chat, ann, "/unmute Bob", "Bob speaks again")
    assert (await real.ask(chat, ann, "/strategy list", "Set strategy")).startswith(
        "Set strategy = list.\nCharacters: Mira, Bob\nStrategy: list;"
    )
    llm.script(FakeReply(text="Here."), FakeReply(text="Here too."))
    first, second = await _turn(real, chat, ann, "Anyone there?", 2)  # nobody named
    assert (first.text, second.text) == ("Mira\nHere.", "Bob\nHere too.")

    # Manual: a message gets no answer (its lines stay in the story) until /speak.
    await real.ask(chat, ann, "/strategy manual", "Set strategy = manual")
    sent = await tg.send_text(chat, ann, "Mira, are you there?")
    llm.script(FakeReply(text="I am."))
    await tg.send_text(chat, ann, "/speak mira")
    (spoken,) = await _replies_after(real, chat, int(sent["message_id"]), 1)
    assert spoken.text == "Mira\nI am." and counter(spoken) == "1/1"
    history = await real.svc.history(telegram_key(chat), MAIN_BRANCH)
    assert [(v.unanswered, v.character, v.inputs) for v in history[-2:]] == [
        (True, "", (("Ann", "Mira, are you there?"),)),
        (False, "Mira", ()),
    ]
    assert "Mira, are you there?" in str(llm.chat_requests[-1].messages)

    members = await real.ask(chat, ann, "/members", "Characters:")
    assert members == "Characters: Mira, Bob\nStrategy: manual; mode: swap"
    await real.ask(chat, ann, "/mute Mira", "Mira is muted")
    assert (await real.ask(chat, ann, "/mode join", "Set mode")).endswith(
        "Characters: Mira (muted), Bob\nStrategy: manual; mode: join"
    )
    info = await real.ask(chat, ann, "/info", "Characters:")
    assert info.startswith("Characters: Mira (muted), Bob\nStrategy: manual; mode: join\n")


async def test_unknown_names_get_one_line_naming_members_or_cards(real: RealHarness) -> None:
    tg = real.tg
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    await _two_members(real, chat, ann)
    assert await real.ask(chat, ann, "/speak Zed", "Zed") == (
        "Zed does not play here; the characters are: Mira, Bob."
    )
    assert await real.ask(chat, ann, "/mute Zed", "Zed") == (
        "Zed does not play here; the characters are: Mira, Bob."
    )
    assert await real.ask(chat, ann, "/add Zed", "No card") == (
        "No card named Zed in this chat; its cards: Bob, Mira (send a card file to add one)."
    )
    assert await real.ask(chat, ann, "/strategy loud", "Usage") == (
        "Usage: /strategy natural|list|pooled|manual"
    )
    # Back to one character: solo again, replies without a name, as before.
    assert (await real.ask(chat, ann, "/remove bob", "Bob leaves")).endswith("Character: Mira")
    assert await real.ask(chat, ann, "/mute Mira", "This chat") == (
        "This chat plays one character (Mira); /add NAME makes a group."
    )
    assert await real.ask(chat, ann, "/members", "Character:") == (
        "Character: Mira\n/add NAME adds another character to make a group."
    )
    real.llm.script(FakeReply(text="Just me."))
    (reply,) = await _turn(real, chat, ann, "Mira?", 1)
    assert reply.html == "Just me."


async def test_in_a_group_chat_only_admins_change_the_group(real: RealHarness) -> None:
    tg, llm = real.tg, real.llm
    owner, bea = tg.new_user("Olga"), tg.new_user("Bea")
    room = tg.group("Tavern", owner=owner, members=(bea,))
    await real.ask(room, owner, "/start", "Session ready")
    await _two_members(real, room, owner)
    assert await real.ask(room, bea, "/strategy list", "Only") == (
        "Only group admins can use /strategy here."
    )
    assert await real.ask(room, bea, "/remove Bob", "Only") == (
        "Only group admins can use /remove here."
    )
    assert (await real.ask(room, bea, "/members", "Characters:")).startswith(
        "Characters: Mira, Bob\nStrategy: natural"
    )
    llm.script(FakeReply(text="Ahoy."), FakeReply(text="Hello."))
    sent = await tg.send_text(room, bea, "Bob, Mira: hi!")
    bob, mira = await _replies_after(real, room, int(sent["message_id"]), 2)
    assert (bob.html, mira.html) == ("<b>Bob</b>\nAhoy.", "<b>Mira</b>\nHello.")
    # Each reply answers the message that called it.
    assert bob.reply_to == mira.reply_to == int(sent["message_id"])
    # Anyone may call a member to speak, as anyone may /regen.
    llm.script(FakeReply(text="Aye?"))
    called = await tg.send_text(room, bea, "/speak Bob")
    (spoken,) = await _replies_after(real, room, int(called["message_id"]), 1)
    assert spoken.html == "<b>Bob</b>\nAye?"


async def test_a_later_member_failing_keeps_the_earlier_reply_and_retries_alone(
    real: RealHarness,
) -> None:
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    key = telegram_key(chat)
    await _two_members(real, chat, ann)
    llm.script(FakeReply(text="Aye."), FakeError(status=500))
    bob, error = await _turn(real, chat, ann, "Bob, Mira: ready?", 2)
    await real.ask(chat, ann, "/members", "Characters:")  # the failed turn's handler is done
    # Bob's reply stays as it was; Mira's failure is its own message, with 🔄 alone.
    assert (bob.html, counter(bob)) == ("<b>Bob</b>\nAye.", "1/1")
    assert (error.text or "").startswith("⚠️")
    latest = (await real.svc.history(key, MAIN_BRANCH))[-1]
    assert (latest.floor, latest.failed) == (2, True)
    llm.script(FakeReply(text="Ready now."))
    await tg.press(chat, ann, error.message_id, button(error, "🔄"))
    await tg.wait_until(lambda: error.html == "<b>Mira</b>\nReady now.", wait_s=WAIT_S)
    await real.ask(chat, ann, "/members", "Characters:")  # the retry's handler is done
    assert counter(error) == "1/1"
    assert bob.html == "<b>Bob</b>\nAye."
    history = await real.svc.history(key, MAIN_BRANCH)
    assert [(v.floor, v.character, v.text, v.failed) for v in history] == [
        (1, "Bob", "Aye.", False),
        (2, "Mira", "Ready now.", False),
    ]


async def test_the_group_commands_are_registered_for_those_who_may_use_them(
    real: RealHarness,
) -> None:
    registered = {
        c.params["scope"]["type"]: [item["command"] for item in c.params["commands"]]
        for c in real.tg.calls_of("setMyCommands")
    }
    changes = {"add", "remove", "mute", "unmute", "strategy", "mode"}
    for scope in ("all_private_chats", "all_chat_administrators"):
        assert changes | {"members", "speak"} <= set(registered[scope])
    # Other group members see the reading and playing ones only.
    assert {"members", "speak"} <= set(registered["all_group_chats"])
    assert not changes & set(registered["all_group_chats"])


async def test_regenerating_a_members_reply_streams_under_its_own_name(
    real: RealHarness,
) -> None:
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    await _two_members(real, chat, ann)  # Mira is the session's character
    llm.script(FakeReply(text="Ahoy."))
    (bob,) = await _turn(real, chat, ann, "Bob, ahoy!", 1)
    edits = len(tg.calls_of("editMessageText"))
    # Paced like a real model, so the message shows the text growing (an engine that writes
    # the page faster than the chunks come would otherwise show the whole reply in one edit).
    llm.script(
        FakeReply(text="Ahoy there, the sea is calm tonight.", chunk_chars=5, chunk_delay_s=0.05)
    )
    await tg.press(chat, ann, bob.message_id, button(bob, "🔄"))
    await tg.wait_until(lambda: counter(bob) == "2/2", wait_s=WAIT_S)
    assert bob.html == "<b>Bob</b>\nAhoy there, the sea is calm tonight."
    shown = [c.params["text"] for c in tg.calls_of("editMessageText")[edits:]]
    assert len(shown) > 1  # streamed: the text grew in place
    assert all(text.startswith("<b>Bob</b>\n") for text in shown)
