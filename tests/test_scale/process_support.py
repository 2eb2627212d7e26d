"""A PostgreSQL database of its own for tests that run several real processes on it.

Processes connect by URL only (no per-test ``search_path``), so each such test gets a fresh
database on the test server, created here and dropped (its connections ended) afterwards."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Final

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine

from tests.conftest import ROOT
from tests.test_e2e.console import ConsoleProcess


@asynccontextmanager
async def fresh_database(pg_url: str) -> AsyncIterator[str]:
    """The URL of a new, empty database on the server of ``pg_url``, dropped on exit."""
    name = f"tb_{uuid.uuid4().hex[:16]}"
    admin = create_async_engine(pg_url, isolation_level="AUTOCOMMIT")
    try:
        async with admin.connect() as conn:
            await conn.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield make_url(pg_url).set(database=name).render_as_string(hide_password=False)
        finally:
            async with admin.connect() as conn:
                await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        await admin.dispose()


START_WAIT_S: Final = 60.0
"""How long a process may take to start and answer (migrations and tokenizers load slowly
on a busy machine)."""


async def ready(proc: ConsoleProcess) -> None:
    """Wait until the console process answers ``/vars``."""
    await proc.send("/vars")
    assert proc.proc.stdout is not None
    async with asyncio.timeout(START_WAIT_S):
        while True:  # info lines (an offline model, a greeting) may come first
            line = await proc.proc.stdout.readline()
            assert line, "the console process ended early"
            if b'"type": "vars"' in line:
                return


def start_unreaped(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    """``python -m bot ARGS`` as a plain ``Popen``: nothing reaps it when it is killed, so
    its process id keeps "running" (a zombie) until :func:`reap`."""
    return subprocess.Popen(
        [sys.executable, "-m", "bot", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=cwd,
    )


def reap(proc: subprocess.Popen[bytes]) -> None:
    """Kill ``proc`` if it still runs, and reap it."""
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=START_WAIT_S)
