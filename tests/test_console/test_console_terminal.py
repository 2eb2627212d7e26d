"""The console on a terminal: a real ``tavernbot chat`` process on a pseudo-terminal.

The model is the fake OpenAI server (echo by default); the test waits for expected output
(a generous timeout bounds each wait, nothing is timed).
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import select
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.console.frontend import THINKING
from adapters.console.terminal import HISTORY_FILE, LEAVE_HINT, clean_line
from tests.conftest import ROOT
from tests.fakes.openai_server import QUIET_MEMORY_AGENT, FakeError, FakeOpenAIServer, FakeReply

pytestmark = pytest.mark.timeout(180)

WAIT_S = 60.0
"""How long one expected piece of output may take to appear (a bound, not an assertion)."""
UP = b"\x1b[A"
PROMPT = "tty·main·no character>"
"""The prompt (its last space is drawn as a cursor move)."""


class Terminal:
    """A child process on a pseudo-terminal, read as it writes."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child
            os.chdir(cwd)
            os.execve(sys.executable, [sys.executable, *args], env)
        self.pid, self.fd = pid, fd
        self.seen = b""
        self.mark = 0
        self.reaped = False

    def _read_until(self, needle: bytes) -> bytes:
        waited = 0.0
        while (found := self.seen.find(needle, self.mark)) < 0:
            ready, _, _ = select.select([self.fd], [], [], 0.5)
            waited += 0.5
            if waited > WAIT_S:
                raise AssertionError(f"never saw {needle!r}; output:\n{self.seen[-3000:]!r}")
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"ended before {needle!r}:\n{self.seen[-3000:]!r}")
                self.seen += chunk
        part = self.seen[self.mark : found + len(needle)]
        self.mark = found + len(needle)
        return part

    async def expect(self, needle: str | bytes) -> bytes:
        """Wait for ``needle`` after what was already matched; returns the output up to it."""
        data = needle.encode() if isinstance(needle, str) else needle
        return await asyncio.to_thread(self._read_until, data)

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def _exit_code(self) -> int:
        with_output = True
        while with_output:  # drain, so the child never blocks on a full terminal
            ready, _, _ = select.select([self.fd], [], [], 0.5)
            try:
                with_output = bool(ready) and bool(os.read(self.fd, 65536))
            except OSError:
                with_output = False
        _, status = os.waitpid(self.pid, 0)
        self.reaped = True
        return os.waitstatus_to_exitcode(status)

    async def exit_code(self) -> int:
        return await asyncio.to_thread(self._exit_code)

    def close(self) -> None:
        if not self.reaped:  # a failed test: end the child it left behind
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer(memory_agent=QUIET_MEMORY_AGENT) as fake:
        yield fake


def _start(
    tmp_path: Path,
    server: FakeOpenAIServer,
    command: tuple[str, ...] = ("chat", "--session", "tty"),
) -> Terminal:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "DISCORD", "TELE"))}
    env.pop("TAVERNBOT_SECRET_KEY", None)
    env.update(
        DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'console.db'}",
        LLM_BASE_URL=server.base_url,
        LLM_MODEL="fake-model",
        LLM_API_KEY="sk-fake",
        PYTHONPATH=str(ROOT),
        TERM="xterm",
        PROMPT_TOOLKIT_NO_CPR="1",
    )
    return Terminal(["-m", "bot", *command], env, tmp_path)


async def test_prompt_history_clear_and_control_characters(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    term = _start(tmp_path, server)
    try:
        await term.expect(PROMPT)
        term.send(b"hello there\r")
        await term.expect("echo: hello there")
        await term.expect(PROMPT)
        term.send(UP + b"\r")  # Up recalls the previous line
        await term.expect("echo: hello there")
        assert [r.last_user_text for r in server.chat_requests] == ["hello there"] * 2
        await term.expect(PROMPT)
        term.send(b"\x0c")  # Ctrl-L clears the screen and shows the prompt again
        await term.expect(b"\x1b[2J")
        await term.expect(PROMPT)
        term.send(b"a\x16\x07b\r")  # Ctrl-V Ctrl-G types a raw BEL between a and b
        await term.expect("echo: ab")
        assert server.chat_requests[-1].last_user_text == "ab"
        await term.expect(PROMPT)
        term.send(b"/quit\r")
        assert await term.exit_code() == 0
    finally:
        term.close()
    history = (tmp_path / HISTORY_FILE.format(session="tty")).read_text(encoding="utf-8")
    assert "+hello there" in history  # kept per session, beside the database


async def test_ctrl_c_stops_the_generation_and_keeps_the_partial_reply(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    hold = asyncio.Event()
    server.script(FakeReply(text="Partial words then the rest", chunk_chars=8, hold=hold))
    term = _start(tmp_path, server)
    try:
        await term.expect(PROMPT)
        term.send(b"tell me\r")
        await term.expect(THINKING)
        await term.expect("Partial ")  # the first chunk; the stream is held open after it
        term.send(b"\x03")
        await term.expect("stopped")
        await term.expect(PROMPT)
        term.send(b"/history\r")
        await term.expect("/history\x1b")  # the line as accepted; the output follows
        out = await term.expect("Partial")
        out += await term.expect(PROMPT)
        assert b"#1" in out and b"the rest" not in out and b"failed" not in out
        term.send(b"/quit\r")
        assert await term.exit_code() == 0
    finally:
        hold.set()
        term.close()


async def test_two_ctrl_c_at_the_prompt_leave(tmp_path: Path, server: FakeOpenAIServer) -> None:
    term = _start(tmp_path, server)
    try:
        await term.expect(PROMPT)
        term.send(b"\x03")
        await term.expect(LEAVE_HINT)
        await term.expect(PROMPT)
        term.send(b"\x03")
        assert await term.exit_code() == 0
    finally:
        term.close()


async def test_prompt_names_the_character_and_history_outlives_the_process(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Seraphina"}}
    (tmp_path / "seraphina.json").write_text(json.dumps(card), encoding="utf-8")
    story = ("chat", "--session", "story")
    term = _start(tmp_path, server, (*story, "--character", "seraphina.json"))
    try:
        await term.expect("story·main·Seraphina>")
        term.send(b"first line\r")
        await term.expect("echo: first line")
        await term.expect("story·main·Seraphina>")
        term.send(b"/quit\r")
        assert await term.exit_code() == 0
    finally:
        term.close()
    term = _start(tmp_path, server, story)  # the same session again, in a new process
    try:
        await term.expect("story·main·Seraphina>")
        term.send(UP + UP + b"\r")  # Up: /quit, Up again: the line before it
        await term.expect("echo: first line")
        assert [r.last_user_text for r in server.chat_requests] == ["first line"] * 2
        await term.expect("story·main·Seraphina>")
        term.send(b"/quit\r")
        assert await term.exit_code() == 0
    finally:
        term.close()


async def test_run_without_platforms_uses_the_line_editor(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    term = _start(tmp_path, server, ("run",))
    try:
        await term.expect("default·main·no character>")  # [console] session, by default
        term.send(b"hi\r")
        await term.expect("echo: hi")
        await term.expect("default·main·no character>")
        term.send(b"/quit\r")
        assert await term.exit_code() == 0
    finally:
        term.close()


async def test_sigterm_at_the_prompt_ends_cleanly(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    term = _start(tmp_path, server)
    try:
        await term.expect(PROMPT)
        os.kill(term.pid, signal.SIGTERM)
        assert await term.exit_code() == 0
    finally:
        term.close()


def test_control_characters_are_taken_out_of_a_line() -> None:
    assert clean_line("a\x07b\x1b[31mc\td") == "ab[31mc d"


async def test_reopening_a_session_shows_its_last_floors(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    term = _start(tmp_path, server)
    try:
        await term.expect(PROMPT)
        term.send(b"where am I\r")
        await term.expect("echo: where am I")
        await term.expect(PROMPT)
        term.send(b"/quit\r")
        assert await term.exit_code() == 0
    finally:
        term.close()
    term = _start(tmp_path, server)  # the same session, in a new process
    try:
        await term.expect("the last floors of branch main:")
        shown = await term.expect(PROMPT)
        assert b"#1 User: where am I" in shown and b"echo: where am I" in shown
        term.send(b"/quit\r")
        assert await term.exit_code() == 0
    finally:
        term.close()


async def test_impersonate_puts_the_draft_in_the_prompt(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    term = _start(tmp_path, server)
    try:
        await term.expect(PROMPT)
        term.send(b"hello\r")
        await term.expect("echo: hello")
        await term.expect(PROMPT)
        server.script(FakeReply(text="I sit down by the fire."))
        term.send(b"/impersonate\r")
        await term.expect("draft ready in the prompt")
        await term.expect(PROMPT)
        await term.expect("I sit down by the fire.")  # in the editing buffer, not sent
        assert [r.last_user_text for r in server.chat_requests] == ["hello", "hello"]
        term.send(b" Quietly.\r")  # the draft, changed, then sent
        await term.expect("echo: I sit down by the fire. Quietly.")
        assert server.chat_requests[-1].last_user_text == "I sit down by the fire. Quietly."
        await term.expect(PROMPT)
        term.send(b"/quit\r")
        assert await term.exit_code() == 0
    finally:
        term.close()


def _group_cards(folder: Path) -> tuple[str, ...]:
    """Mira's and Kael's cards (talkativeness 0: only named members answer), as ``chat``
    arguments."""
    for name in ("Mira", "Kael"):
        card = {"name": name, "first_mes": "", "extensions": {"talkativeness": 0}}
        data = {"spec": "chara_card_v2", "spec_version": "2.0", "data": card}
        (folder / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    return ("--character", "Mira.json", "--character", "Kael.json")


async def test_a_groups_replies_each_follow_their_speakers_name(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    cards = _group_cards(tmp_path)
    hold = asyncio.Event()
    server.script(
        FakeReply(text="I row at dawn.", chunk_chars=6, hold=hold),
        FakeReply(text="The lamp is lit.", chunk_chars=6),
    )
    term = _start(tmp_path, server, ("chat", "--session", "crew", *cards))
    try:
        await term.expect("crew·main·Mira, Kael>")
        term.send(b"Kael and Mira, ready?\r")
        # Kael's name, then the first words of Kael's reply while its stream is held open.
        await term.expect(THINKING)
        await term.expect("Kael: I row ")
        hold.set()
        await term.expect("at dawn.\r\n  ‹ 1/1 › [main #1]\r\n")
        await term.expect("Mira: The lamp is lit.\r\n  ‹ 1/1 › [main #2]")
        await term.expect("crew·main·Mira, Kael>")
        term.send(b"/quit\r")
        assert await term.exit_code() == 0
    finally:
        hold.set()
        term.close()


async def test_a_group_reply_that_fails_puts_its_error_on_a_line_of_its_own(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    cards = _group_cards(tmp_path)
    server.script(FakeReply(text="I row at dawn."), FakeError(status=400))
    term = _start(tmp_path, server, ("chat", "--session", "crew", *cards))
    try:
        await term.expect("crew·main·Mira, Kael>")
        term.send(b"Kael and Mira, ready?\r")
        await term.expect("Kael: I row at dawn.\r\n  ‹ 1/1 › [main #1]\r\n")
        await term.expect("Mira: \r\n! ")  # the error after Mira's name, on its own line
        await term.expect("/regen retries it")
        await term.expect("crew·main·Mira, Kael>")
        term.send(b"/quit\r")
        assert await term.exit_code() == 0
    finally:
        term.close()
