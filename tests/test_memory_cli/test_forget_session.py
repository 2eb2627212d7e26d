"""``tavernbot memory forget --session S ID``: the session option is accepted, as on the
other memory actions, and names the session the memory must belong to (issue 16)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from bot.cli import main
from tests.conftest import ROOT
from tests.test_memory_cli.test_memory_commands import SESSION, _seed, db

__all__ = ["db"]


def test_forget_accepts_the_session_option(db: str) -> None:
    ids = asyncio.run(_seed(db))
    done = subprocess.run(
        [sys.executable, "-m", "bot", "memory", "forget", "--session", SESSION, ids["weather"]],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"DATABASE_URL": db, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("forgotten: ") and ids["weather"] in done.stdout
    assert "usage:" not in done.stderr


def test_forget_in_another_session_is_refused(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    ids = asyncio.run(_seed(db))
    assert main(["memory", "forget", "--session", "nobody", ids["weather"]]) == 1
    assert "no console session named 'nobody'" in capsys.readouterr().err
    assert main(["memory", "forget", "--session", SESSION, "no-such-id"]) == 1
    assert "no memory with id 'no-such-id' in session 'demo'" in capsys.readouterr().err
    assert main(["memory", "list", "--session", SESSION, "--json"]) == 0
    assert ids["weather"] in {row["id"] for row in json.loads(capsys.readouterr().out)}
