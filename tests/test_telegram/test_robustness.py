"""Robustness: 429 and network retries, polling outages, webhook mode, restarts."""

from __future__ import annotations

import pytest

from tests.test_telegram.conftest import Harness


async def test_429_with_retry_after_is_retried_and_the_reply_arrives(harness: Harness) -> None:
    runner = await harness.start(use_drafts=False)
    srv = harness.server
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    srv.fail_next("sendMessage", status=429, retry_after=3)
    srv.fail_next("editMessageText", status=429, retry_after=2, times=2)
    await srv.send_text(chat, alice, "flood me")
    reply = await harness.wait_text(chat["id"], lambda t: t.endswith("flood me"))
    await srv.wait_until(lambda: reply.reply_markup is not None)
    assert 3.0 in runner.retry.retried_after and 3.0 in harness.slept
    assert [c.status for c in srv.calls_of("sendMessage")][:2] == [429, 200]
    assert len(harness.texts(chat["id"])) == 1  # retried, never doubled


async def test_server_errors_are_retried_with_backoff(harness: Harness) -> None:
    await harness.start()
    srv = harness.server
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    srv.fail_next("sendMessage", status=502, description="Bad Gateway", times=2)
    await srv.send_text(chat, alice, "shaky")
    await harness.wait_text(chat["id"], lambda t: t.endswith("shaky"))
    assert harness.slept[:2] == [0.5, 1.0]  # doubled backoff
    assert len(harness.texts(chat["id"])) == 1


async def test_network_errors_are_retried(harness: Harness) -> None:
    from tests.fakes.telegram.server import DROP

    await harness.start(use_drafts=False)
    srv = harness.server
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    srv.fail_next("sendMessage", status=DROP, description="cut")
    await srv.send_text(chat, alice, "cut off")
    reply = await harness.wait_text(chat["id"], lambda t: t.endswith("cut off"))
    await srv.wait_until(lambda: reply.reply_markup is not None)
    assert 0.5 in harness.slept
    assert [c.status for c in srv.calls_of("sendMessage")] == [DROP, 200]


async def test_polling_resumes_after_an_outage_without_losing_or_repeating(
    harness: Harness,
) -> None:
    await harness.start()
    srv, service = harness.server, harness.service
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    await srv.wait_for("getUpdates")
    srv.fail_polls(3, mode="drop")
    for word in ("one", "two", "three"):
        await srv.send_text(chat, alice, word)
    await harness.wait_text(chat["id"], lambda t: t.endswith("three"))
    assert [c.status for c in srv.poll_calls].count(502) == 3
    # The answer to a poll is lost after the batch left the server: it comes again, once.
    srv.fail_polls(1, mode="lose")
    await srv.send_text(chat, alice, "four")
    await harness.wait_text(chat["id"], lambda t: t.endswith("four"))
    # Lines that arrive together may share a floor; each is played once, in order.
    said = [line.text for c in service.calls if c[0] == "respond" for line in c[1][2]]
    assert said == ["one", "two", "three", "four"]
    assert max(srv.delivered.values()) == 2  # "four" was handed out twice, handled once
    replies = " ".join(harness.texts(chat["id"]))
    positions = [replies.index(f"Alice: {word}") for word in said]
    assert positions == sorted(positions)
    assert all(replies.count(f"Alice: {word}") == 1 for word in said)


async def test_webhook_mode_receives_updates(harness: Harness) -> None:
    runner = await harness.start(mode="webhook", webhook_port=0, webhook_secret="s3cret")
    srv = harness.server
    hook = srv.world.webhook
    assert hook["url"] == f"http://127.0.0.1:{runner.webhook_port}/telegram"
    assert hook["secret_token"] == "s3cret"
    assert "message_reaction" in hook["allowed_updates"]
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    update = await srv.send_text(chat, alice, "by webhook")
    await harness.wait_text(chat["id"], lambda t: t.endswith("by webhook"))
    assert srv.webhook_posts and not srv.poll_calls
    assert update["message_id"] > 0


async def test_bot_restarts_and_carries_on_with_the_same_service(harness: Harness) -> None:
    srv, service = harness.server, harness.service
    first = await harness.start()
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    await srv.send_text(chat, alice, "before")
    await harness.wait_text(chat["id"], lambda t: t.endswith("before"))
    await srv.send_text(chat, alice, "/branch")
    note = await harness.wait_text(chat["id"], lambda t: t.startswith("Branched"))
    forked = note.text.split("branch ")[1].split(" ")[0]
    await harness.stop(first)

    await srv.send_text(chat, alice, "while down")  # waits on the server for the next bot
    second = await harness.start()
    await harness.wait_text(chat["id"], lambda t: t.endswith("while down"))
    await srv.send_text(chat, alice, "after")
    reply = await harness.wait_text(chat["id"], lambda t: t.endswith("after"))
    await srv.wait_until(lambda: reply.reply_markup is not None)
    said = [c[1][2][0].text for c in service.calls if c[0] == "respond"]
    assert said == ["before", "while down", "after"]  # nothing handled twice
    assert len([c for c in service.calls if c[0] == "fork"]) == 1  # /branch confirmed on stop
    branches = [c[1][1] for c in service.calls if c[0] == "respond"]
    assert branches == ["main", forked, forked]  # the current branch survived the restart
    key = next(iter(service.sessions))
    assert [v.floor for v in await service.history(key, forked)] == [1, 2, 3]
    # Buttons of the new bot work on the reply it sent.
    data = reply.reply_markup["inline_keyboard"][0][3]["callback_data"]
    await srv.press(chat, alice, reply.message_id, data)
    await srv.wait_until(lambda: reply.text.endswith("(take 2)"))
    assert second.errors == []


async def test_a_wrong_token_fails_start_cleanly(harness: Harness) -> None:
    from aiogram.exceptions import TelegramUnauthorizedError

    from adapters.telegram.runner import TelegramRunner
    from engine.errors import ConfigurationError

    runner = TelegramRunner(harness.service, harness.config(token="999:WRONG"))
    with pytest.raises(ConfigurationError, match="Telegram token .* was refused") as caught:
        await runner.start()
    assert isinstance(caught.value.__cause__, TelegramUnauthorizedError)
    assert runner.bot.session._session is None or runner.bot.session._session.closed


async def test_a_user_who_blocked_the_bot_is_not_an_error(harness: Harness) -> None:
    runner = await harness.start()
    srv = harness.server
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    srv.fail_next("sendMessage", status=403, description="Forbidden: bot was blocked by the user")
    srv.fail_next(
        "sendMessageDraft", status=403, description="Forbidden: bot was blocked by the user"
    )
    await srv.send_text(chat, alice, "/start")
    await srv.wait_for("getUpdates", lambda c: bool(c.params.get("offset")), count=1)
    await srv.send_text(chat, alice, "still there?")
    await harness.wait_text(chat["id"], lambda t: t.endswith("still there?"))
    assert runner.errors == []
