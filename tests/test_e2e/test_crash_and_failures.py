"""A process killed (SIGKILL) while a reply streams leaves a failed floor after the restart and
a consistent database; a 500 mid-stream shows an error and the next message works."""

from __future__ import annotations

import asyncio
import io
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.storage import open_storage
from bot.app import chat
from bot.config import load_settings
from tests.fakes.openai_server import QUIET_MEMORY_AGENT as AGENT
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_e2e.console import ConsoleProcess, chat_env

pytestmark = pytest.mark.timeout(120)


async def test_sigkill_during_a_streamed_reply(tmp_path: Path) -> None:
    db = tmp_path / "crash.db"
    async with FakeOpenAIServer(max_requests=20, lifetime_s=100.0, memory_agent=AGENT) as fake:
        env = chat_env(db, fake.base_url)
        proc = await ConsoleProcess.start(env, "--session", "crash", cwd=tmp_path)
        assert (await proc.ask("before"))["floor"] == 1
        fake.script(FakeReply(text="a slow story " * 40, chunk_chars=4, chunk_delay_s=0.05))
        await proc.send("tell me a story")
        await fake.wait_requests(2, timeout_s=20.0)
        await asyncio.sleep(0.5)  # some chunks are out; the floor is generating
        assert not fake.chat_requests[1].finished
        proc.proc.send_signal(signal.SIGKILL)
        await proc.proc.wait()

        restarted = await ConsoleProcess.start(env, "--session", "crash", cwd=tmp_path)
        # Issue 19: its start-up recovery failed the floor, and the console says so once.
        assert await restarted.read() == {
            "type": "error",
            "message": "the reply to floor 2 on branch main was interrupted",
            "retry": "/regen",
        }
        after = await restarted.ask("after the crash")
        # Issue 12: the interrupted floor keeps its number, and its message stays in the
        # chat: the next prompt holds it.
        assert (after["floor"], after["text"]) == (3, "echo: after the crash")
        users = [m["content"] for m in fake.chat_requests[-1].messages if m["role"] == "user"]
        assert users[-2:] == ["tell me a story", "after the crash"]
        history = await restarted.ask("/history", kinds=("info",))
        assert history["message"].startswith("#1")
        failed, last = await restarted.read(), await restarted.read()
        assert failed["message"] == "#2 ‹failed, no reply› tell me a story"
        assert last["message"].startswith("#3 ‹1/1›")
        assert await restarted.close() == 0

    storage = await open_storage(f"sqlite+aiosqlite:///{db}", migrate=False)
    try:
        async with storage.unit_of_work() as uow:
            failed = await uow.floors.in_state("failed")
            assert [f.seq for f in failed] == [2]
            assert "interrupted" in (failed[0].error or "")
            assert await uow.floors.in_state("generating") == []
            assert await uow.floors.in_state("draft") == []
            assert await uow.pages.in_status("pending") == []
            committed = await uow.floors.committed(failed[0].branch_id, 1, None)
            assert [f.seq for f in committed] == [1, 3]
            kept = await uow.messages.of_floors([failed[0].id])
            assert [(m.role, m.raw) for m in kept] == [("user", "tell me a story")]
    finally:
        await storage.close()


async def _lines(items: list[str]) -> AsyncIterator[str]:
    for item in items:
        yield item


async def test_500_mid_stream_in_the_console(tmp_path: Path) -> None:
    async with FakeOpenAIServer(max_requests=20, lifetime_s=100.0, memory_agent=AGENT) as fake:
        settings = load_settings(environ=chat_env(tmp_path / "c.db", fake.base_url))
        settings = settings.model_copy(
            update={"llm": settings.llm.model_copy(update={"max_retries": 0})}
        )
        fake.script(
            FakeReply(text="fine"),
            FakeReply(text="this breaks halfway", error_after_chunks=1),
        )
        out = io.StringIO()
        code = await chat(
            settings,
            session="s",
            user="Ann",
            jsonl=True,
            files={},
            lines=lambda: _lines(["/setvar mood calm", "one", "two", "/vars", "three", "/quit"]),
            out=out,
        )
    assert code == 0
    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    kinds = [r["type"] for r in rows]
    assert kinds == ["info", "reply", "error", "vars", "reply"]
    assert "mid-stream" in rows[2]["message"]
    assert rows[3]["vars"] == {"mood": "calm"}
    assert (rows[4]["floor"], rows[4]["text"]) == (3, "echo: three")  # floor 2 failed


async def test_a_new_console_chat_opens_with_the_greeting(tmp_path: Path) -> None:
    card = tmp_path / "mira.json"
    data = {"name": "Mira", "first_mes": "Hello {{user}}, I am {{char}}.", "description": ""}
    await asyncio.to_thread(card.write_text, json.dumps(data))
    settings = load_settings(environ=chat_env(tmp_path / "g.db", None))
    out = io.StringIO()
    await chat(
        settings,
        session="g",
        user="Ann",
        jsonl=True,
        files={"card": [("mira.json", await asyncio.to_thread(card.read_bytes))]},
        lines=lambda: _lines(["hi", "/quit"]),
        out=out,
    )
    replies = [json.loads(x) for x in out.getvalue().splitlines()]
    replies = [r for r in replies if r["type"] == "reply"]
    assert (replies[0]["floor"], replies[0]["text"]) == (1, "Hello Ann, I am Mira.")
    assert replies[1]["floor"] == 2


async def test_ctrl_c_stops_the_console_while_it_waits_for_input(tmp_path: Path) -> None:
    proc = await ConsoleProcess.start(chat_env(tmp_path / "i.db", None), cwd=tmp_path)
    assert (await proc.ask("hello"))["floor"] == 1
    proc.proc.send_signal(signal.SIGINT)  # stdin stays open: the reader is blocked in it
    code = await asyncio.wait_for(proc.proc.wait(), 15.0)
    assert code == 0
