"""No dead ends in a real ``tavernbot chat`` process against the fake model server: a reply
with no text is an error where the reply would have been, the input stays in ``/history``
and ``/regen`` turns it into a real reply on a new page of the same floor. ``/set`` changes
what the model is offered for that session only."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.fakes.openai_server import (
    QUIET_MEMORY_AGENT as QUIET,
)
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    FakeReply,
    FakeToolCall,
)
from tests.test_e2e.console import READ_TIMEOUT_S, ConsoleProcess, chat_env

pytestmark = pytest.mark.timeout(120)
NO_TEXT = "the model returned no text"
FILTERED = "the model's content filter stopped the reply"


def set_mood(value: str) -> FakeReply:
    args = json.dumps({"name": "mood", "value": value})
    return FakeReply(tool_calls=[FakeToolCall(name="set_variable", arguments=args)])


@pytest.mark.parametrize(
    ("empty", "says"),
    [
        (FakeReply(text=""), NO_TEXT),
        (FakeReply(text="  \n "), NO_TEXT),
        (set_mood("grim"), NO_TEXT),
        (FakeReply(text="", finish_reason="content_filter"), FILTERED),
    ],
    ids=["empty", "whitespace", "tool-call-not-offered", "content-filter"],
)
async def test_an_empty_reply_is_an_error_and_regen_retries_it(
    tmp_path: Path, empty: FakeReply, says: str
) -> None:
    async with FakeOpenAIServer(max_requests=20, lifetime_s=110.0, memory_agent=QUIET) as fake:
        proc = await ConsoleProcess.start(
            chat_env(tmp_path / "e2e.db", fake.base_url), "--session", "s", cwd=tmp_path
        )
        try:
            assert (await proc.ask("first"))["text"] == "echo: first"
            fake.script(empty)
            error = await proc.ask("hello there")
            assert error["type"] == "error" and error["message"] == says, error
            assert error["retry"] == "/regen"
            # the request offered no tools, and the call that was not offered did nothing
            assert "tools" not in fake.chat_requests[-1].body
            assert "mood" not in (await proc.ask("/vars"))["vars"]
            await proc.send("/history")
            shown = [(await proc.read())["message"] for _ in range(2)]
            assert shown == ["#1 ‹1/1› echo: first", "#2 ‹failed, no reply› hello there"]
            again = await proc.ask("/regen")
            assert again["type"] == "reply", again
            assert (again["floor"], again["text"]) == (2, "echo: hello there")
            # a failed attempt keeps no page: the retry is the floor's first real page
            assert again["page"] == again["pages"] == 1
            assert fake.chat_requests[-1].last_user_text.endswith("hello there")
            await proc.send("/history")
            shown = [(await proc.read())["message"] for _ in range(2)]
            assert shown[1] == "#2 ‹1/1› echo: hello there"
        finally:
            assert await proc.close() == 0


async def test_a_failed_regen_keeps_the_page_shown_and_the_next_one_is_page_two(
    tmp_path: Path,
) -> None:
    async with FakeOpenAIServer(max_requests=20, lifetime_s=110.0, memory_agent=QUIET) as fake:
        proc = await ConsoleProcess.start(
            chat_env(tmp_path / "e2e.db", fake.base_url), "--session", "s", cwd=tmp_path
        )
        try:
            assert (await proc.ask("hello"))["text"] == "echo: hello"
            fake.script(FakeReply(text=" "))
            error = await proc.ask("/regen")
            assert (error["type"], error["message"]) == ("error", NO_TEXT)
            await proc.send("/history")
            assert (await proc.read())["message"] == "#1 ‹1/1› echo: hello"
            fake.script(FakeReply(text="Another answer."))
            again = await proc.ask("/regen")
            assert (again["floor"], again["page"], again["pages"]) == (1, 2, 2)
            assert again["text"] == "Another answer."
            back = await proc.ask("/swipe <")
            assert (back["page"], back["text"]) == (1, "echo: hello")
        finally:
            assert await proc.close() == 0


async def test_set_tools_and_mode_reach_the_model_for_that_session_only(tmp_path: Path) -> None:
    db = tmp_path / "e2e.db"
    async with FakeOpenAIServer(max_requests=20, lifetime_s=110.0, memory_agent=QUIET) as fake:
        env = chat_env(db, fake.base_url)
        proc = await ConsoleProcess.start(env, "--session", "tooled", cwd=tmp_path)
        try:
            assert (await proc.ask("/set tools on", kinds=("info", "error")))["value"] == "on"
            fake.script(set_mood("happy"), FakeReply(text="Smiles."))
            assert (await proc.ask("hi"))["text"] == "Smiles."
            assert "tools" in fake.chat_requests[-2].body
            assert (await proc.ask("/vars"))["vars"]["mood"] == "happy"
            assert (await proc.ask("/set tools off", kinds=("info", "error")))["value"] == "off"
            await proc.ask("again")
            assert "tools" not in fake.chat_requests[-1].body
            assert (await proc.ask("/set tools on", kinds=("info", "error")))["value"] == "on"
        finally:
            assert await proc.close() == 0
        other = await ConsoleProcess.start(env, "--session", "plain", cwd=tmp_path)
        try:
            await other.ask("hello")
            assert "tools" not in fake.chat_requests[-1].body
            info = await other.ask("/info", kinds=("info",))
            assert info["options"]["tools"] == "off"
        finally:
            assert await other.close() == 0
        back = await ConsoleProcess.start(env, "--session", "tooled", cwd=tmp_path)
        try:
            info = await back.ask("/info", kinds=("info",))
            assert info["options"]["tools"] == "on"  # kept by the session, across runs
        finally:
            assert await back.close() == 0


async def test_plain_terminal_shows_one_error_line_where_the_reply_was(tmp_path: Path) -> None:
    async with FakeOpenAIServer(max_requests=20, lifetime_s=110.0, memory_agent=QUIET) as fake:
        fake.script(FakeReply(text=""))
        env = chat_env(tmp_path / "e2e.db", fake.base_url)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "chat", "--session", "s",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env={**env, "PYTHONPATH": str(ROOT)}, cwd=tmp_path,
        )  # fmt: skip
        out, err = await asyncio.wait_for(
            proc.communicate(b"hello\n/history\n/regen\n"), READ_TIMEOUT_S * 3
        )
    lines = out.decode().splitlines()
    assert proc.returncode == 0, err.decode()
    errors = [line for line in lines if line.startswith("! ")]
    assert errors == [f"! {NO_TEXT} (/regen retries it)"], lines
    # /history shows both sides: the input under its speaker, the failure with its error.
    assert "#1 User: hello" in lines
    assert f"   ‹failed, no reply›: {NO_TEXT}" in lines
    assert "echo: hello" in lines and "  ‹ 1/1 › [main #1]" in lines
    assert "Traceback" not in out.decode() + err.decode()
