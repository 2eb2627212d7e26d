"""Long polling with two ``tavernbot run`` processes on one PostgreSQL database (issue 19):
only the holder of the poller role polls; when it is killed, the other takes the role over
once its lease expired, and answers. The fake Bot API answers an overlapping getUpdates with
409 Conflict, as Telegram does, and counts how many polls ever ran at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram.server import FakeTelegramServer
from tests.test_e2e.test_two_processes import pg_database  # noqa: F401  (fixture)
from tests.test_scale.telegram_support import (
    START_WAIT_S,
    TOKEN,
    BotProcess,
    Cluster,
    database,
    eventually,
    models_asked,
    replies,
    rows,
    wait_until,
)

pytestmark = pytest.mark.timeout(240)

CHATS = 5
ANSWER_WAIT_S = 60.0
LEADER_LEASE_S = 3.0
SETTINGS = {
    "telegram": f"leader_lease_s = {LEADER_LEASE_S}",
    "database": "lease_heartbeat_s = 0.5\nlease_expiry_s = 4",
}


async def test_one_process_polls_at_a_time_and_the_other_takes_over_from_a_killed_leader(
    tmp_path: Path,
    pg_database: str,  # noqa: F811
) -> None:
    engine = database(pg_database)
    async with (
        FakeTelegramServer(token=TOKEN, max_lifetime_s=230.0, max_poll_s=1.0) as tg,
        FakeOpenAIServer(max_requests=200, lifetime_s=230.0) as llm,
    ):
        tg.exclusive_polls = True
        cluster = Cluster(tmp_path, pg_database, tg, llm)
        try:
            first = cluster.start("model-a", mode="polling", **SETTINGS)
            await wait_until(
                lambda: any(c.status == 200 for c in tg.poll_calls),
                wait_s=START_WAIT_S,
                what="the first process polling",
            )
            second = cluster.start("model-b", mode="polling", **SETTINGS)

            async def both_up() -> bool:
                return len(await rows(engine, "select owner from process_lease")) == 2

            await eventually(both_up, wait_s=START_WAIT_S, what="the second process's lease")

            async def leader() -> BotProcess:
                found = await rows(
                    engine,
                    "select l.pid from role_lease r join process_lease l on l.owner = r.holder",
                )
                assert len(found) == 1, found
                return next(p for p in cluster.processes if p.proc.pid == found[0].pid)

            assert (await leader()) is first
            users = [tg.new_user(f"User{i}") for i in range(CHATS)]
            chats = [tg.private_chat(user) for user in users]
            for i, (chat, user) in enumerate(zip(chats, users, strict=True)):
                await tg.send_text(chat, user, f"chat {i} before")
            await wait_until(
                lambda: all(
                    replies(tg, c["id"]) == [f"echo: chat {i} before"] for i, c in enumerate(chats)
                ),
                wait_s=ANSWER_WAIT_S,
                what="the leader's answers",
            )
            # Only the leader answered, though the stand-by tried for the role meanwhile.
            assert all(models_asked(llm, f"chat {i} before") == ["model-a"] for i in range(CHATS))

            first.proc.kill()
            first.proc.wait()
            for i, (chat, user) in enumerate(zip(chats, users, strict=True)):
                await tg.send_text(chat, user, f"chat {i} after")
            await wait_until(
                lambda: all(
                    replies(tg, c["id"]) == [f"echo: chat {i} before", f"echo: chat {i} after"]
                    for i, c in enumerate(chats)
                ),
                wait_s=ANSWER_WAIT_S,
                what="the new leader's answers",
            )
            assert all(models_asked(llm, f"chat {i} after") == ["model-b"] for i in range(CHATS))
            # Nothing answered twice: the earlier lines were not asked again by the new leader.
            assert all(len(models_asked(llm, f"chat {i} before")) == 1 for i in range(CHATS))
            assert (await leader()) is second
            assert tg.poll_conflicts == 0
            assert tg.max_polls_at_once == 1
            assert await cluster.stop(second) == 0, second.output()
            # A clean stop gives the role up at once.
            assert await rows(engine, "select holder from role_lease") == []
        finally:
            await cluster.close()
            await engine.dispose()
