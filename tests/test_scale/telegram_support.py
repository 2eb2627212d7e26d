"""Two ``tavernbot run`` processes serving one Telegram bot on one PostgreSQL database.

Each process is a real subprocess (``subprocess.Popen``: it is reaped only when the test says
so, which lets a SIGKILLed process stay a zombie whose process id still "runs", so its lease
must expire before its turn is failed). Each process asks the fake model under its own model
name, so every model request says which process made it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.storage import create_engine
from tests.conftest import ROOT
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.telegram.server import FakeTelegramServer

TOKEN = "123456:" + "T" * 35
STOP_WAIT_S = 20.0
"""How long a process may take to stop after SIGINT before it is killed."""
START_WAIT_S = 45.0
"""How long both processes may take to start (migrations, the first requests)."""


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def process_env(database_url: str) -> dict[str, str]:
    """The test's environment without model, platform or database variables, plus the
    shared database."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LLM_", "DISCORD", "TELE", "DATABASE_", "TAVERNBOT_"))
    }
    return {**env, "PYTHONPATH": str(ROOT), "DATABASE_URL": database_url}


@dataclass
class BotProcess:
    """One ``tavernbot run`` subprocess with its model name and (webhook mode) port."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    port: int | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/telegram"

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@dataclass
class Cluster:
    """The processes of one test, stopped (or killed) in teardown."""

    tmp_path: Path
    database_url: str
    tg: FakeTelegramServer
    llm: FakeOpenAIServer
    processes: list[BotProcess] = field(default_factory=list)

    def start(self, name: str, *, mode: str, telegram: str = "", database: str = "") -> BotProcess:
        """Start ``tavernbot run`` as model ``name`` in ``mode`` (webhook: on a port of its
        own, registering the one shared URL)."""
        folder = self.tmp_path / name
        folder.mkdir()
        port = free_port() if mode == "webhook" else None
        hook = (
            f'webhook_url = "http://127.0.0.1:9/telegram"\nwebhook_port = {port}\n'
            if port is not None
            else ""
        )
        config = folder / "tavernbot.toml"
        config.write_text(
            f'[database]\n{database}\n[llm]\nbase_url = "{self.llm.base_url}"\n'
            f'model = "{name}"\nmax_retries = 0\n'
            f'[telegram]\ntoken = "{TOKEN}"\napi_base = "{self.tg.base_url}"\n'
            f'mode = "{mode}"\n{hook}batch_lines = false\n{telegram}\n'
            "[session]\nmemory = false\n",
            encoding="utf-8",
        )
        log = self.tmp_path / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "bot", "--config", str(config), "run"],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=process_env(self.database_url),
                cwd=folder,
            )
        process = BotProcess(name=name, proc=proc, log=log, port=port)
        self.processes.append(process)
        return process

    async def start_webhooks(
        self, names: tuple[str, ...] = ("model-a", "model-b"), *, database: str = ""
    ) -> list[BotProcess]:
        """Start one webhook process per name, one after the other (the first start migrates
        the new database), each once the one before has registered the shared webhook."""
        started = []
        for count, name in enumerate(names, start=1):
            started.append(self.start(name, mode="webhook", database=database))
            await wait_until(
                lambda count=count: len(self.tg.calls_of("setWebhook")) >= count,
                wait_s=START_WAIT_S,
                what=f"{name} registering the webhook",
            )
        return started

    async def stop(self, process: BotProcess) -> int | None:
        """SIGINT, then SIGKILL if it does not stop in time; its exit code."""
        if process.proc.poll() is None:
            process.proc.send_signal(signal.SIGINT)
        try:
            return await asyncio.to_thread(process.proc.wait, STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            process.proc.kill()
            return await asyncio.to_thread(process.proc.wait, STOP_WAIT_S)

    async def close(self) -> None:
        """Stop every process; print their output (shown when the test failed)."""
        for process in self.processes:
            with contextlib.suppress(Exception):
                await self.stop(process)
            print(f"--- {process.name}\n{process.output()}")


async def wait_until(
    condition: Callable[[], bool], *, wait_s: float, what: str, poll_s: float = 0.05
) -> None:
    """Wait until ``condition()`` holds; fail naming ``what`` after ``wait_s``."""
    deadline = asyncio.get_running_loop().time() + wait_s
    while not condition():
        if asyncio.get_running_loop().time() >= deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(poll_s)


async def eventually(probe: Callable[[], Awaitable[bool]], *, wait_s: float, what: str) -> None:
    """Wait until ``await probe()`` holds (a database read); fail naming ``what``."""
    deadline = asyncio.get_running_loop().time() + wait_s
    while not await probe():
        if asyncio.get_running_loop().time() >= deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


def replies(tg: FakeTelegramServer, chat_id: int) -> list[str]:
    """The texts of the bot's messages in a chat, oldest first."""
    return [m.text or "" for m in tg.bot_messages(chat_id)]


def models_asked(llm: FakeOpenAIServer, words: str) -> list[str]:
    """The model names (processes) of the requests whose last user message is ``words``."""
    return [str(r.body.get("model")) for r in llm.chat_requests if r.last_user_text == words]


async def rows(engine: AsyncEngine, sql: str, **params: Any) -> list[Any]:
    """The rows of one query on the shared database."""
    async with engine.connect() as conn:
        return list(await conn.execute(text(sql), params))


def database(url: str) -> AsyncEngine:
    """An engine on the shared database, for the test's own reads."""
    return create_engine(url)
