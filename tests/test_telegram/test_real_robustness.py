"""Robustness on the real engine: 429s are retried and the reply arrives; the bot restarts on
the same database file and carries on (history, keyboards, the private chat's branch)."""

from __future__ import annotations

import pytest

from engine.turns.api import MAIN_BRANCH
from tests.fakes.openai_server import FakeReply
from tests.test_telegram.real_engine import RealHarness, button, counter, real, telegram_key

__all__ = ["real"]
pytestmark = pytest.mark.timeout(90)


async def test_a_429_with_retry_after_is_retried_and_the_reply_arrives(real: RealHarness) -> None:
    runner = await real.restart(use_drafts=False)
    tg = real.tg
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    tg.fail_next("sendMessage", status=429, retry_after=3)
    tg.fail_next("editMessageText", status=429, retry_after=2, times=2)
    reply = await real.reply_to(chat, ann, "flood me")
    assert reply.text == "Reply 1: flood me"
    assert 3.0 in runner.retry.retried_after and 3.0 in real.slept
    assert [c.status for c in tg.calls_of("sendMessage")][:2] == [429, 200]
    assert real.texts(chat["id"]) == ["Reply 1: flood me"]  # retried, never doubled
    # the turn was committed once
    history = await real.svc.history(telegram_key(chat), MAIN_BRANCH)
    assert [(v.floor, v.pages) for v in history] == [(1, 1)]


async def test_the_bot_restarts_on_the_same_database_and_carries_on(real: RealHarness) -> None:
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    first = await real.reply_to(chat, ann, "My name is Ann")
    await real.reply_to(chat, ann, "I carry a lantern")
    await tg.send_text(chat, ann, "/setvar torch lit")
    await real.wait_text(chat["id"], lambda t: t.startswith("Set torch"))
    await tg.send_text(chat, ann, "/branch", reply_to=first.message_id)
    note = await real.wait_text(chat["id"], lambda t: t.startswith("Branched"))
    fork = (note.text or "").split("now on branch ")[1].split(" ")[0]
    on_fork = await real.reply_to(chat, ann, "Down the left path")

    await real.restart()
    key = telegram_key(chat)
    # the private chat is still on its fork, and the next prompt carries its earlier turns
    llm.script(FakeReply(text="Still here."))
    after = await real.reply_to(chat, ann, "Are you still there?")
    assert after.text == "Still here."
    prompt = " ".join(str(m.get("content")) for m in llm.chat_requests[-1].messages)
    assert "My name is Ann" in prompt and "Down the left path" in prompt
    assert "I carry a lantern" not in prompt  # main's floor 2 is not on the fork
    assert [v.floor for v in await real.svc.history(key, fork)] == [1, 2, 3]
    assert len(await real.svc.history(key, MAIN_BRANCH)) == 2
    assert "torch = lit" in await real.ask(chat, ann, "/vars", "Variables")
    # the new bot does not know where the old one put its keyboard: a press on the older
    # reply is refused and removes it, the latest floor stays as it is
    assert on_fork.reply_markup is not None
    await tg.press(chat, ann, on_fork.message_id, button(on_fork, "🔄"))
    await tg.wait_until(lambda: on_fork.reply_markup is None)
    assert (await real.svc.history(key, fork))[-1].pages == 1
    # the newest reply's buttons work after the restart
    await tg.press(chat, ann, after.message_id, button(after, "🔄"))
    await tg.wait_until(lambda: counter(after) == "2/2")
    assert (after.text or "").startswith("Reply ")
    assert (after.text or "").endswith(": Are you still there?")
    await tg.press(chat, ann, after.message_id, button(after, "◀️"))
    await tg.wait_until(lambda: counter(after) == "1/2")
    assert after.text == "Still here."


async def test_a_restart_before_the_first_turn_on_a_fork_keeps_the_fork(
    real: RealHarness,
) -> None:
    """The service keeps the chat's current branch (``set_current_branch``), so a fresh fork
    with no floor of its own yet is still the chat's branch after a restart."""
    tg = real.tg
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    await real.reply_to(chat, ann, "one")
    await real.reply_to(chat, ann, "two")
    await tg.send_text(chat, ann, "/branch")
    note = await real.wait_text(chat["id"], lambda t: t.startswith("Branched"))
    fork = (note.text or "").split("now on branch ")[1].split(" ")[0]
    await real.restart()
    await real.reply_to(chat, ann, "three")
    key = telegram_key(chat)
    main = [v.text.rsplit(" ", 1)[-1] for v in await real.svc.history(key, MAIN_BRANCH)]
    forked = [v.text.rsplit(" ", 1)[-1] for v in await real.svc.history(key, fork)]
    assert (main, forked) == (["one", "two"], ["one", "two", "three"])
    assert await real.svc.current_branch(key) == fork
