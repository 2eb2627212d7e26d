"""A killed process's turn is failed by another process only once its lease expired, and a
clean stop gives the lease up at once (issue 19), with real ``tavernbot chat`` processes on
one PostgreSQL database.

Process A is SIGKILLed while its reply streams; it is not reaped until the end (a zombie
whose process id still "runs"), so process B cannot take it for dead by its process id and
must wait for the lease to expire ([database] ``lease_expiry_s``, short here). Every sample
of the database read while A's lease still stood shows the floor generating; after that B's
sweep fails it, the user's message stays on the floor, and B goes on serving the branch."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from adapters.storage import create_engine
from engine.timeline.service import INTERRUPTED
from tests.fakes.openai_server import QUIET_MEMORY_AGENT, FakeOpenAIServer, FakeReply
from tests.test_e2e.console import ConsoleProcess, chat_env
from tests.test_scale.process_support import fresh_database, ready, reap, start_unreaped

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]
LEASE_HEARTBEAT_S = 0.5
LEASE_EXPIRY_S = 12.0
"""Long enough that the test reads the database while the killed process's lease stands."""
WAIT_S = 60.0
"""Upper bound for something the test waits for (never a speed claim)."""
STATE = text(
    "SELECT f.state, f.error, f.owner, "
    "(SELECT l.expires_at > now() FROM process_lease l WHERE l.owner = f.owner) AS standing "
    "FROM floor f WHERE f.seq = 1 ORDER BY f.id LIMIT 1"
)


LEASES = text("SELECT heartbeat_at FROM process_lease WHERE owner != :a")


def replies(hold: asyncio.Event) -> Any:
    """Process A's reply stops after its first piece (until ``hold``, never set); B's echo."""

    def respond(body: Mapping[str, Any]) -> FakeReply:
        if body.get("model") == "model-a":
            return FakeReply(text="A long reply that never ends", chunk_chars=2, hold=hold)
        said = next(
            (str(m.get("content")) for m in reversed(body["messages"]) if m["role"] == "user"),
            "",
        )
        return FakeReply(text=f"echo: {said}")

    return respond


async def test_a_killed_turn_fails_only_after_the_lease_expired(
    tmp_path: Path, pg_url: str
) -> None:
    config = tmp_path / "tavernbot.toml"
    config.write_text(
        f"[database]\nlease_heartbeat_s = {LEASE_HEARTBEAT_S}\nlease_expiry_s = {LEASE_EXPIRY_S}\n"
    )
    hold = asyncio.Event()
    async with (
        fresh_database(pg_url) as url,
        FakeOpenAIServer(
            responder=replies(hold),
            max_requests=20,
            lifetime_s=170.0,
            hang_limit_s=170.0,
            memory_agent=QUIET_MEMORY_AGENT,
        ) as fake,
    ):
        base = {**chat_env(tmp_path / "unused.db", fake.base_url), "DATABASE_URL": url}
        args = ["chat", "--jsonl", "--session", "s", "--config", str(config)]
        # A: subprocess.Popen, so nothing reaps it when it is killed.
        a = start_unreaped(args, {**base, "LLM_MODEL": "model-a"}, tmp_path)
        b: ConsoleProcess | None = None
        db = create_engine(url)
        try:
            assert a.stdin is not None
            a.stdin.write(b"hello there\n")
            a.stdin.flush()
            await fake.wait_requests(1, timeout_s=WAIT_S)  # A's reply is streaming
            async with db.connect() as conn:
                state, _, owner_a, standing = (await conn.execute(STATE)).one()
            assert (state, standing) == ("generating", True)
            b = await ConsoleProcess.start(
                {**base, "LLM_MODEL": "model-b"}, *args[2:], cwd=tmp_path
            )
            # B's console waits for the branch (its greeting check queues behind A's turn);
            # its lease beats meanwhile, and each beat sweeps: A's live turn is left alone.
            beats: set[Any] = set()
            async with asyncio.timeout(WAIT_S):
                while len(beats) < 3:  # B's lease renewed twice after its start-up sweep
                    async with db.connect() as conn:
                        rows = await conn.execute(LEASES, {"a": owner_a})
                        beats.update(row.heartbeat_at for row in rows)
                    await asyncio.sleep(LEASE_HEARTBEAT_S / 5)
            async with db.connect() as conn:
                assert (await conn.execute(STATE)).one()[:2] == ("generating", None)
            os.kill(a.pid, signal.SIGKILL)
            samples: list[tuple[str, bool | None]] = []
            async with asyncio.timeout(WAIT_S):
                while True:  # the sweep's effect is in the database only: look often
                    async with db.connect() as conn:
                        state, error, _, standing = (await conn.execute(STATE)).one()
                    samples.append((state, standing))
                    if state != "generating":
                        break
                    await asyncio.sleep(LEASE_HEARTBEAT_S / 5)
            assert (state, error) == ("failed", INTERRUPTED)
            await ready(b)  # A's branch lock went with its connections
            # never failed while the lease stood; the lease was seen standing after the kill
            assert all(s == "generating" for s, standing in samples if standing)
            assert samples[0] == ("generating", True), samples[:3]
            # the user's message is kept on the failed floor, and B serves the branch on
            await b.send("/history")
            shown = await b.read()
            assert shown["message"] == "#1 ‹failed, no reply› hello there"
            reply = await b.ask("and now?")
            assert (reply["type"], reply["floor"], reply["text"]) == ("reply", 2, "echo: and now?")
            assert await b.close() == 0
            async with db.connect() as conn:
                owners = {
                    r.owner for r in await conn.execute(text("SELECT owner FROM process_lease"))
                }
            # B stopped cleanly and gave its lease up at once; A's dead lease is left
            assert owners == {owner_a}
        finally:
            if b is not None:
                await b.close()
            reap(a)
            await db.dispose()
