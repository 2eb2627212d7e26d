"""A webhook process SIGKILLed in the middle of a streamed reply (issue 19): two ``tavernbot
run`` processes on one PostgreSQL database serve one Telegram bot, each streaming a slow reply;
one is killed. The other keeps serving; the killed process's floor becomes ``failed`` only
after its lease expired (the killed process stays a zombie, so its process id still "runs" and
only the expiry can tell it dead), never the live process's floor; the live process tells
that chat once that its reply was interrupted; the user's message is kept and nothing is
answered twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.telegram.runner import INTERRUPTED_LINE
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeResponse, echo_responder
from tests.fakes.telegram.server import FakeTelegramServer
from tests.test_e2e.test_two_processes import pg_database  # noqa: F401  (fixture)
from tests.test_scale.telegram_support import (
    TOKEN,
    Cluster,
    database,
    eventually,
    models_asked,
    replies,
    rows,
    wait_until,
)

pytestmark = pytest.mark.timeout(280)

ANSWER_WAIT_S = 90.0
LEASE_EXPIRY_S = 5
SLOW_TEXT = " ".join(f"w{n}" for n in range(240))
"""A reply streamed in about 30 s (8 characters a chunk, a chunk every 0.12 s)."""
NOTICE = f"⚠️ {INTERRUPTED_LINE}"
"""What the live process tells the chat whose reply the killed process was streaming."""
FLOOR_STATE = (
    "select f.state from floor f join message m on m.floor_id = f.id "
    "where m.role = 'user' and m.raw = :raw"
)


def slow_for(texts: set[str]) -> Any:
    """Answer ``texts`` with the slow reply, everything else with the echo."""

    def respond(body: Mapping[str, Any]) -> FakeResponse:
        for message in reversed(body.get("messages", [])):
            if message.get("role") == "user":
                if message.get("content") in texts:
                    return FakeReply(text=SLOW_TEXT, chunk_chars=8, chunk_delay_s=0.12)
                break
        return echo_responder(body)

    return respond


async def test_a_killed_process_floor_fails_after_its_lease_and_the_other_serves_on(
    tmp_path: Path,
    pg_database: str,  # noqa: F811
) -> None:
    engine = database(pg_database)
    async with (
        FakeTelegramServer(token=TOKEN, max_lifetime_s=270.0) as tg,
        FakeOpenAIServer(
            max_requests=200, lifetime_s=270.0, responder=slow_for({"chat 0 slow", "chat 1 slow"})
        ) as llm,
    ):
        cluster = Cluster(tmp_path, pg_database, tg, llm)
        setting = f"lease_heartbeat_s = 0.5\nlease_expiry_s = {LEASE_EXPIRY_S}"
        try:
            procs = await cluster.start_webhooks(database=setting)
            killed, live = procs
            dead = False

            def pick(update: dict[str, Any]) -> int:
                # Chat i goes to process i % 2; once one is dead the balancer skips it.
                return 1 if dead else int(str(update["message"]["text"]).split()[1]) % 2

            tg.balance([p.url for p in procs], pick)
            users = [tg.new_user(f"User{i}") for i in range(4)]
            chats = [tg.private_chat(user) for user in users]
            await tg.send_text(chats[0], users[0], "chat 0 slow")
            await tg.send_text(chats[1], users[1], "chat 1 slow")
            # Both replies are streaming: drafts with part of the text reached each chat.
            await wait_until(
                lambda: all(
                    tg.calls_of("sendMessageDraft", chat_id=chats[i]["id"]) for i in (0, 1)
                ),
                wait_s=ANSWER_WAIT_S,
                what="both replies streaming",
            )
            assert models_asked(llm, "chat 0 slow") == [killed.name]
            assert models_asked(llm, "chat 1 slow") == [live.name]

            killed.proc.kill()  # not reaped yet: a zombie, its process id still taken
            dead = True
            lease = await rows(
                engine,
                "select expires_at from process_lease where pid = :pid",
                pid=killed.proc.pid,
            )
            assert len(lease) == 1
            expires_at = lease[0].expires_at
            seen: list[tuple[datetime, str]] = []

            async def failed() -> bool:
                now = datetime.now(UTC)
                state = (await rows(engine, FLOOR_STATE, raw="chat 0 slow"))[0].state
                seen.append((now, state))
                return bool(state == "failed")

            # The live process serves other chats while the dead one's lease runs out.
            for i in (2, 3):
                await tg.send_text(chats[i], users[i], f"chat {i} meanwhile")
            await eventually(failed, wait_s=ANSWER_WAIT_S, what="the killed floor failed")
            before = [state for at, state in seen if at < expires_at]
            assert before and set(before) == {"generating"}, (expires_at, seen)
            await wait_until(
                lambda: all(
                    replies(tg, chats[i]["id"]) == [f"echo: chat {i} meanwhile"] for i in (2, 3)
                ),
                wait_s=ANSWER_WAIT_S,
                what="the live process answering other chats",
            )
            # The live process's own slow reply is finished, not failed.
            await wait_until(
                lambda: replies(tg, chats[1]["id"]) == [SLOW_TEXT],
                wait_s=ANSWER_WAIT_S,
                what="the live process's slow reply",
            )
            assert (await rows(engine, FLOOR_STATE, raw="chat 1 slow"))[0].state == "committed"
            # The live process's sweep failed it and told the chat, once; the chat of its own
            # streaming reply heard nothing of it.
            await wait_until(
                lambda: NOTICE in replies(tg, chats[0]["id"]),
                wait_s=ANSWER_WAIT_S,
                what="the chat told that its reply was interrupted",
            )
            assert replies(tg, chats[0]["id"]) == [NOTICE]
            assert NOTICE not in replies(tg, chats[1]["id"])
            # The user's message of the failed floor is kept; the chat plays on in the other.
            assert len(await rows(engine, FLOOR_STATE, raw="chat 0 slow")) == 1
            await tg.send_text(chats[0], users[0], "chat 0 again")
            await wait_until(
                lambda: "echo: chat 0 again" in replies(tg, chats[0]["id"]),
                wait_s=ANSWER_WAIT_S,
                what="the chat of the killed reply answered again",
            )
            assert replies(tg, chats[0]["id"]).count("echo: chat 0 again") == 1
            assert replies(tg, chats[0]["id"]).count(NOTICE) == 1
            assert SLOW_TEXT not in replies(tg, chats[0]["id"])
            assert models_asked(llm, "chat 0 slow") == [killed.name]
            assert models_asked(llm, "chat 0 again") == [live.name]
            assert await cluster.stop(live) == 0, live.output()
        finally:
            await cluster.close()
            await engine.dispose()
