"""Branches: forum topics fork from main and keep their messages; /branch forks in private."""

from __future__ import annotations

from tests.test_telegram.conftest import Harness


async def test_forum_topic_forks_a_branch_whose_messages_stay_in_it(harness: Harness) -> None:
    await harness.start()
    srv, service = harness.server, harness.service
    owner = srv.new_user("Olga")
    forum = srv.group("Saga", owner=owner, forum=True)
    await srv.send_text(forum, owner, "/start")
    await harness.wait_text(forum["id"], lambda t: t.startswith("Session ready"))
    await srv.send_text(forum, owner, "In the general topic")
    general = await harness.wait_text(forum["id"], lambda t: t.endswith("general topic"))
    await srv.wait_until(lambda: general.reply_markup is not None)
    assert general.thread_id is None

    topic = await srv.create_topic(forum, owner, "Side quest")
    await srv.send_text(forum, owner, "Into the cave", thread_id=topic)
    side = await harness.wait_text(forum["id"], lambda t: t.endswith("cave"), thread_id=topic)
    await srv.wait_until(lambda: side.reply_markup is not None)
    assert side.thread_id == topic

    key = next(iter(service.sessions))
    info = await service.session_info(key)
    branches = {b.name: b for b in info.branches}
    # Floor 1 is the greeting /start put there; the topic forks after the latest floor.
    assert branches[str(topic)].parent == "main" and branches[str(topic)].fork_floor == 2
    main_history = [v.text for v in await service.history(key, "main")]
    topic_history = [v.text for v in await service.history(key, str(topic))]
    assert main_history[0].endswith("greets Olga.")
    assert len(main_history) == 2 and not any("cave" in t for t in main_history)
    assert topic_history[:2] == main_history and topic_history[2].endswith("cave")
    # The topic's keyboard carries its branch; the main reply keeps its own keyboard.
    assert f'"{topic}"' not in str(general.reply_markup)
    assert general.reply_markup is not None
    # /vars in the topic reads the topic's branch.
    await srv.send_text(forum, owner, "/vars", thread_id=topic)
    vars_reply = await harness.wait_text(forum["id"], lambda t: "branch" in t, thread_id=topic)
    assert f"branch {topic}" in vars_reply.text


async def test_branch_as_a_reply_forks_at_that_floor_and_switches(harness: Harness) -> None:
    await harness.start()
    srv, service = harness.server, harness.service
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    for word in ("one", "two", "three"):
        await srv.send_text(chat, alice, word)
        await harness.wait_text(chat["id"], lambda t, w=word: t.endswith(w))
    first_reply = srv.bot_messages(chat["id"])[0]
    await srv.send_text(chat, alice, "/branch", reply_to=first_reply.message_id)
    note = await harness.wait_text(chat["id"], lambda t: t.startswith("Branched"))
    assert "after floor 1" in note.text
    await srv.send_text(chat, alice, "four")
    await harness.wait_text(chat["id"], lambda t: t.endswith("four"))

    key = next(iter(service.sessions))
    new_branch = note.text.split("branch ")[1].split(" ")[0]
    history = [v.text for v in await service.history(key, new_branch)]
    assert [h.rsplit(" ", 1)[-1] for h in history] == ["one", "four"]
    main = [v.text.rsplit(" ", 1)[-1] for v in await service.history(key, "main")]
    assert main == ["one", "two", "three"]

    # /branches lists both with buttons; pressing main switches back.
    await srv.send_text(chat, alice, "/branches")
    listing = await harness.wait_text(chat["id"], lambda t: t.startswith("Branches"))
    buttons = {
        b["text"]: b["callback_data"] for r in listing.reply_markup["inline_keyboard"] for b in r
    }
    assert any(text.startswith("✅ " + new_branch) for text in buttons)
    main_button = next(data for text, data in buttons.items() if text.startswith("main"))
    await srv.press(chat, alice, listing.message_id, main_button)
    await srv.wait_for("answerCallbackQuery")
    await srv.send_text(chat, alice, "five")
    await harness.wait_text(chat["id"], lambda t: t.endswith("five"))
    main = [v.text.rsplit(" ", 1)[-1] for v in await service.history(key, "main")]
    assert main == ["one", "two", "three", "five"]


async def test_branch_without_reply_forks_at_the_head(harness: Harness) -> None:
    await harness.start()
    srv, service = harness.server, harness.service
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    await srv.send_text(chat, alice, "one")
    await harness.wait_text(chat["id"], lambda t: t.endswith("one"))
    await srv.send_text(chat, alice, "/branch")
    note = await harness.wait_text(chat["id"], lambda t: t.startswith("Branched"))
    assert "after floor 1" in note.text
    key = next(iter(service.sessions))
    assert len((await service.session_info(key)).branches) == 2


async def test_branch_in_a_group_points_to_topics(harness: Harness) -> None:
    await harness.start()
    srv = harness.server
    owner = srv.new_user("Olga")
    group = srv.group("G", owner=owner)
    await srv.send_text(group, owner, "/start")
    await harness.wait_text(group["id"], lambda t: t.startswith("Session ready"))
    await srv.send_text(group, owner, "/branch")
    assert await harness.wait_text(group["id"], lambda t: "forum topic" in t)


async def test_topics_keep_working_after_reset(harness: Harness) -> None:
    await harness.start()
    srv = harness.server
    owner = srv.new_user("Olga")
    forum = srv.group("Saga", owner=owner, forum=True)
    await srv.send_text(forum, owner, "/start")
    await harness.wait_text(forum["id"], lambda t: t.startswith("Session ready"))
    topic = await srv.create_topic(forum, owner, "Quest")
    await srv.send_text(forum, owner, "first run", thread_id=topic)
    await harness.wait_text(forum["id"], lambda t: t.endswith("first run"), thread_id=topic)
    await srv.send_text(forum, owner, "/reset", thread_id=topic)
    await harness.wait_text(forum["id"], lambda t: "starts over" in t, thread_id=topic)
    await srv.send_text(forum, owner, "second run", thread_id=topic)
    again = await harness.wait_text(forum["id"], lambda t: "second run" in t, thread_id=topic)
    assert again.text.endswith("You said: Olga: second run")
