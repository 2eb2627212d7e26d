"""One Telegram bot in webhook mode served by two ``tavernbot run`` processes on one
PostgreSQL database (issue 19).

A load balancer in front of the one webhook URL (the fake Bot API's ``balance``) posts the
updates of 50 private chats alternately to both processes: chat ``i``'s line ``k`` goes to
process ``(i + k) % 2``, so every chat hops between the processes at each line. Every line must
be answered exactly once, in order per chat, each by the process it was posted to; an update
Telegram redelivers (to the other process or to the same one) is not answered again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram.server import FakeTelegramServer
from tests.test_e2e.test_two_processes import pg_database  # noqa: F401  (fixture)
from tests.test_scale.telegram_support import (
    TOKEN,
    Cluster,
    models_asked,
    replies,
    wait_until,
)

pytestmark = pytest.mark.timeout(280)

CHATS = 50
LINES = 3
ANSWER_WAIT_S = 150.0
SHARED_URL = "http://127.0.0.1:9/telegram"
"""The webhook URL both processes register (the balancer's address; never reached)."""


def line(chat: int, number: int) -> str:
    return f"chat {chat} line {number}"


async def test_fifty_chats_posted_alternately_to_two_processes_are_answered_once_in_order(
    tmp_path: Path,
    pg_database: str,  # noqa: F811
) -> None:
    async with (
        FakeTelegramServer(token=TOKEN, max_lifetime_s=270.0) as tg,
        FakeOpenAIServer(max_requests=1_000, lifetime_s=270.0) as llm,
    ):
        cluster = Cluster(tmp_path, pg_database, tg, llm)
        try:
            procs = await cluster.start_webhooks()
            # Both register the same URL (idempotent): neither takes the bot from the other.
            assert {c.params["url"] for c in tg.calls_of("setWebhook")} == {SHARED_URL}
            users = [tg.new_user(f"User{i}") for i in range(CHATS)]
            chats = [tg.private_chat(user) for user in users]
            route: dict[int, int] = {}
            """Update id -> process index, for redeliveries."""

            def pick(update: dict[str, Any]) -> int:
                if update["update_id"] in route:
                    return route[update["update_id"]]
                words = str(update["message"]["text"]).split()
                return (int(words[1]) + int(words[3])) % 2

            tg.balance([p.url for p in procs], pick)
            first_updates: list[int] = []
            for number in range(LINES):
                posted = len(tg.webhook_posts)
                for i, (chat, user) in enumerate(zip(chats, users, strict=True)):
                    await tg.send_text(chat, user, line(i, number))
                    if number == 0:
                        first_updates.append(tg.updates_sent[-1]["update_id"])
                # The next line of a chat is posted once Telegram saw this one acknowledged.
                await wait_until(
                    lambda posted=posted: len(tg.webhook_posts) >= posted + CHATS,
                    wait_s=ANSWER_WAIT_S,
                    what=f"line {number} acknowledged in every chat",
                )

            def expected(i: int, lines: int) -> list[str]:
                return [f"echo: {line(i, k)}" for k in range(lines)]

            await wait_until(
                lambda: all(
                    replies(tg, chat["id"]) == expected(i, LINES) for i, chat in enumerate(chats)
                ),
                wait_s=ANSWER_WAIT_S,
                what="every line answered",
            )
            for i in range(CHATS):
                for k in range(LINES):
                    # Asked once, by the process the line was posted to.
                    assert models_asked(llm, line(i, k)) == [procs[(i + k) % 2].name], (i, k)

            # Telegram redelivers line 0 of chats 0-9 to the other process and of chats 10-19
            # to the same one: both are acknowledged and dropped.
            posted = len(tg.webhook_posts)
            for i, update_id in enumerate(first_updates[:20]):
                route[update_id] = (i + (1 if i < 10 else 0)) % 2
                tg.redeliver(update_id)
            await wait_until(
                lambda: len(tg.webhook_posts) >= posted + 20,
                wait_s=ANSWER_WAIT_S,
                what="the redeliveries acknowledged",
            )
            for i in range(20):
                await tg.send_text(chats[i], users[i], line(i, LINES))
            await wait_until(
                lambda: all(
                    replies(tg, chats[i]["id"])[-1:] == [f"echo: {line(i, LINES)}"]
                    for i in range(20)
                ),
                wait_s=ANSWER_WAIT_S,
                what="the line after the redeliveries answered",
            )
            for i, chat in enumerate(chats):
                assert replies(tg, chat["id"]) == expected(i, LINES + (1 if i < 20 else 0))
                assert len(models_asked(llm, line(i, 0))) == 1
            codes = [await cluster.stop(p) for p in procs]
            assert codes == [0, 0], [p.output() for p in procs]
        finally:
            await cluster.close()
