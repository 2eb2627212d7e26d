"""Driving ``tavernbot chat --jsonl`` as a real subprocess through its stdin and stdout."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

READ_TIMEOUT_S = 20.0
"""How long one answer line may take before the test fails."""
ANSWER_TYPES = ("reply", "vars", "error")


def chat_env(db: Path, base_url: str | None) -> dict[str, str]:
    """The environment for a console process on database ``db`` and model ``base_url``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "DISCORD", "TELE"))}
    env["DATABASE_URL"] = f"sqlite+aiosqlite:///{db}"
    env.pop("TAVERNBOT_SECRET_KEY", None)
    if base_url:
        env["LLM_BASE_URL"] = base_url
        env["LLM_MODEL"] = "fake-model"
        env["LLM_API_KEY"] = "sk-e2e"
    return env


class ConsoleProcess:
    """One ``tavernbot chat --jsonl`` process."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, env: dict[str, str], *args: str, cwd: Path) -> ConsoleProcess:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "chat",
            "--jsonl",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env={**env, "PYTHONPATH": str(ROOT)},
            cwd=cwd,
        )
        return cls(proc)

    async def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text.encode() + b"\n")
        await self.proc.stdin.drain()

    async def read(self) -> dict[str, Any]:
        """The next JSON line."""
        assert self.proc.stdout is not None
        raw = await asyncio.wait_for(self.proc.stdout.readline(), READ_TIMEOUT_S)
        if not raw:
            raise AssertionError("the console process ended early")
        value: dict[str, Any] = json.loads(raw)
        self.lines.append(value)
        return value

    async def ask(self, text: str, *, kinds: tuple[str, ...] = ANSWER_TYPES) -> dict[str, Any]:
        """Send a line and return the first answer of one of ``kinds`` (info lines skipped)."""
        await self.send(text)
        while True:
            line = await self.read()
            if line["type"] in kinds:
                return line

    async def close(self) -> int:
        """End the input and wait for the process to exit."""
        if self.proc.returncode is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                await asyncio.wait_for(self.proc.wait(), READ_TIMEOUT_S)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        assert self.proc.returncode is not None
        return self.proc.returncode
