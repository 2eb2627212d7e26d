"""Two real ``tavernbot chat`` processes on one PostgreSQL session, talking at the same time
(issue 19): turns of the branch queue across the processes (advisory locks), so every reply
is kept, none is refused as busy, and the floors follow the order each process sent in.

Before the branch order spanned processes, a reply could be shown and then vanish from
``/history`` (``PageTransitionError``), or the second process was refused as busy."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import QUIET_MEMORY_AGENT, FakeOpenAIServer, FakeReply
from tests.test_e2e.console import ConsoleProcess, chat_env
from tests.test_scale.process_support import fresh_database

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]
TURNS = 4
"""Messages each process sends."""


def slow_echo(body: Mapping[str, Any]) -> FakeReply:
    """Echo the message in small streamed pieces, so the two processes' turns overlap."""
    said = ""
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            said = str(message.get("content") or "")
            break
    return FakeReply(text=f"echo: {said}", chunk_chars=3, chunk_delay_s=0.02)


async def play(proc: ConsoleProcess, name: str) -> list[dict[str, Any]]:
    """Send ``TURNS`` messages one after the other; the answers in order."""
    return [await proc.ask(f"{name} says {n}") for n in range(1, TURNS + 1)]


async def test_two_consoles_on_one_session_keep_every_reply_in_order(
    tmp_path: Path, pg_url: str
) -> None:
    async with (
        fresh_database(pg_url) as url,
        FakeOpenAIServer(
            responder=slow_echo,
            max_requests=200,
            lifetime_s=170.0,
            memory_agent=QUIET_MEMORY_AGENT,
        ) as fake,
    ):
        env = {**chat_env(tmp_path / "unused.db", fake.base_url), "DATABASE_URL": url}
        first = await ConsoleProcess.start(env, "--session", "shared", cwd=tmp_path)
        second: ConsoleProcess | None = None
        try:
            # the first process creates the session (and migrates) before the second opens it
            assert (await first.ask("/vars"))["type"] == "vars"
            second = await ConsoleProcess.start(env, "--session", "shared", cwd=tmp_path)
            assert (await second.ask("/vars"))["type"] == "vars"
            answers = await asyncio.gather(play(first, "ann"), play(second, "bob"))
            floors: dict[int, str] = {}
            for name, replies in zip(("ann", "bob"), answers, strict=True):
                assert [r["type"] for r in replies] == ["reply"] * TURNS, replies
                assert [r["text"] for r in replies] == [
                    f"echo: {name} says {n}" for n in range(1, TURNS + 1)
                ]
                seqs = [r["floor"] for r in replies]
                assert seqs == sorted(seqs), f"{name}'s floors out of order: {seqs}"
                floors.update({r["floor"]: r["text"] for r in replies})
            # one floor per message, numbered without a gap or a double
            assert sorted(floors) == list(range(1, 2 * TURNS + 1))
            # both processes see every reply kept, as committed (nothing vanished)
            for proc in (first, second):
                await proc.send(f"/history {2 * TURNS}")
                shown = [await proc.read() for _ in range(2 * TURNS)]
                assert [line["message"] for line in shown] == [
                    f"#{seq} ‹1/1› {floors[seq]}" for seq in sorted(floors)
                ]
        finally:
            codes = [await proc.close() for proc in (first, second) if proc is not None]
        assert codes == [0, 0]
