"""SQLite is single-host, one bot process at a time (issue 19): a second real ``tavernbot
chat`` on the same file says why it waits, answers nothing meanwhile, and starts as soon as the
first one stops."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_e2e.console import ConsoleProcess, chat_env
from tests.test_scale.process_support import START_WAIT_S, ready

pytestmark = pytest.mark.timeout(180)


async def test_a_second_process_on_one_sqlite_file_waits_for_the_first(tmp_path: Path) -> None:
    db = tmp_path / "bot.db"
    env = chat_env(db, None)
    first = await ConsoleProcess.start(env, "--session", "s", cwd=tmp_path)
    second: asyncio.subprocess.Process | None = None
    try:
        await ready(first)
        second = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "chat",
            "--jsonl",
            "--session",
            "s",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**env, "PYTHONPATH": str(ROOT)},
            cwd=tmp_path,
        )
        assert second.stdin is not None and second.stdout is not None
        assert second.stderr is not None
        second.stdin.write(b"/vars\n")
        await second.stdin.drain()
        waiting = f"tavernbot: another tavernbot process is using {db}; waiting for it to stop..."
        async with asyncio.timeout(START_WAIT_S):
            said = [(await second.stderr.readline()).decode().strip()]
            while said[-1] != waiting:  # "tavernbot: database FILE" comes first
                assert said[-1], said
                said.append((await second.stderr.readline()).decode().strip())
        # the first one still serves; the second starts once it stopped
        assert (await first.ask("/vars"))["type"] == "vars"
        assert second.returncode is None
        assert await first.close() == 0
        async with asyncio.timeout(START_WAIT_S):
            answered = [json.loads(await second.stdout.readline())]
            while answered[-1]["type"] != "vars":
                answered.append(json.loads(await second.stdout.readline()))
        second.stdin.close()
        assert await asyncio.wait_for(second.wait(), START_WAIT_S) == 0
    finally:
        await first.close()
        if second is not None and second.returncode is None:
            second.kill()
            await second.wait()
