"""Branches on the real engine: forum topics fork branches whose floors stay in them, and
``/branch`` as a reply in a private chat forks at that floor (checked in storage)."""

from __future__ import annotations

import pytest

from engine.turns.api import MAIN_BRANCH
from tests.test_telegram.real_engine import RealHarness, counter, real, telegram_key

__all__ = ["real"]
pytestmark = pytest.mark.timeout(90)


async def test_a_forum_topic_forks_a_branch_whose_messages_stay_in_it(real: RealHarness) -> None:
    tg = real.tg
    owner = tg.new_user("Olga")
    forum = tg.group("Saga", owner=owner, forum=True)
    await tg.send_text(forum, owner, "/start")
    await real.wait_text(forum["id"], lambda t: t.startswith("Session ready"))
    general = await real.reply_to(forum, owner, "In the general topic")
    assert general.thread_id is None and "In the general topic" in (general.text or "")

    topic = await tg.create_topic(forum, owner, "Side quest")
    side = await real.reply_to(forum, owner, "Into the cave", thread_id=topic)
    assert side.thread_id == topic and "Into the cave" in (side.text or "")
    assert general.reply_markup is not None  # each branch keeps its own latest keyboard

    key = telegram_key(forum)
    info = await real.svc.session_info(key)
    branches = {b.name: b for b in info.branches}
    assert branches[str(topic)].parent == MAIN_BRANCH and branches[str(topic)].fork_floor == 1
    assert branches[str(topic)].floors == 2 and branches[MAIN_BRANCH].floors == 1
    main = [v.text for v in await real.svc.history(key, MAIN_BRANCH)]
    side_history = [v.text for v in await real.svc.history(key, str(topic))]
    assert len(main) == 1 and "cave" not in main[0]
    assert side_history[0] == main[0] and "Into the cave" in side_history[1]

    # more in the general topic stays on main; the topic's prompt never sees it
    await real.reply_to(forum, owner, "Back at the inn")
    await real.reply_to(forum, owner, "Deeper", thread_id=topic)
    prompt = real.llm.chat_requests[-1].messages
    said = " ".join(str(m.get("content")) for m in prompt)
    assert "Into the cave" in said and "Back at the inn" not in said
    main = [v.text for v in await real.svc.history(key, MAIN_BRANCH)]
    assert len(main) == 2 and not any("Deeper" in t for t in main)
    # /vars in the topic reads the topic's branch
    await tg.send_text(forum, owner, "/vars", thread_id=topic)
    answer = await real.wait_text(forum["id"], lambda t: "branch" in t, thread_id=topic)
    assert f"branch {topic}" in (answer.text or "")


async def test_branch_as_a_reply_forks_at_that_floor_and_switches(real: RealHarness) -> None:
    tg = real.tg
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    first = await real.reply_to(chat, ann, "one")
    await real.reply_to(chat, ann, "two")
    await real.reply_to(chat, ann, "three")
    await tg.send_text(chat, ann, "/branch", reply_to=first.message_id)
    note = await real.wait_text(chat["id"], lambda t: t.startswith("Branched"))
    assert "after floor 1" in (note.text or "")
    name = (note.text or "").split("now on branch ")[1].split(" ")[0]
    four = await real.reply_to(chat, ann, "four")
    assert counter(four) == "1/1"

    key = telegram_key(chat)
    info = {b.name: b for b in (await real.svc.session_info(key)).branches}
    assert info[name].parent == MAIN_BRANCH and info[name].fork_floor == 1
    forked = [v.text for v in await real.svc.history(key, name)]
    assert [t.rsplit(" ", 1)[-1] for t in forked] == ["one", "four"]
    assert [v.floor for v in await real.svc.history(key, name)] == [1, 2]
    main = [v.text.rsplit(" ", 1)[-1] for v in await real.svc.history(key, MAIN_BRANCH)]
    assert main == ["one", "two", "three"]
    # the model saw floor 1 and the new line only
    said = " ".join(str(m.get("content")) for m in real.llm.chat_requests[-1].messages)
    assert "one" in said and "two" not in said and "three" not in said

    # /branches lists both; pressing main switches back and play goes on there
    await tg.send_text(chat, ann, "/branches")
    listing = await real.wait_text(chat["id"], lambda t: t.startswith("Branches"))
    assert listing.reply_markup is not None
    buttons = {
        b["text"]: b["callback_data"] for r in listing.reply_markup["inline_keyboard"] for b in r
    }
    assert any(text.startswith("✅ " + name) for text in buttons)
    main_button = next(data for text, data in buttons.items() if text.startswith("main"))
    await tg.press(chat, ann, listing.message_id, main_button)
    await real.wait_text(chat["id"], lambda t: t.endswith(": three"))
    await real.reply_to(chat, ann, "five")
    main = [v.text.rsplit(" ", 1)[-1] for v in await real.svc.history(key, MAIN_BRANCH)]
    assert main == ["one", "two", "three", "five"]
