"""A line of standard input that is not UTF-8 is refused with a message; the console goes on.

Driven through real ``tavernbot chat`` and ``tavernbot run`` processes (offline model, a fresh
SQLite file), in the ``--jsonl`` mode and in the interactive mode, by piping raw bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from adapters.console.frontend import NOT_UTF8
from tests.conftest import ROOT

pytestmark = pytest.mark.timeout(120)

BAD = b"caf\xe9 au lait\n"  # Latin-1, not UTF-8
INPUT = b"hello there\n" + BAD + b"\xff\xfe\n" + b"still here\n" + b"/quit\n"


def _console(
    tmp_path: Path, *args: str, data: bytes, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "DISCORD", "TELE"))}
    env.update(extra or {})
    env["DATABASE_URL"] = f"sqlite+aiosqlite:///{tmp_path / 'console.db'}"
    env["PYTHONPATH"] = str(ROOT)
    env.pop("TAVERNBOT_SECRET_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=data,
        capture_output=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )


# A strict text stdin (a UTF-8 locale) ended the process at the first bad byte; a C.UTF-8
# one passed the bytes on as lone surrogates. Both read the same now.
@pytest.mark.parametrize("stdin_errors", ["strict", "surrogateescape"])
def test_jsonl_console_refuses_a_bad_line_and_answers_the_next(
    tmp_path: Path, stdin_errors: str
) -> None:
    extra = {"PYTHONIOENCODING": f"utf-8:{stdin_errors}"}
    done = _console(tmp_path, "chat", "--jsonl", "--session", "bytes", data=INPUT, extra=extra)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    lines: list[dict[str, Any]] = [json.loads(x) for x in done.stdout.splitlines()]
    answers = [x for x in lines if x["type"] in ("reply", "error")]
    assert [x["type"] for x in answers] == ["reply", "error", "error", "reply"]
    assert answers[1]["message"] == NOT_UTF8.format(byte=3)
    assert answers[2]["message"] == NOT_UTF8.format(byte=0)
    assert answers[3]["floor"] == answers[0]["floor"] + 1  # the bad lines sent nothing


def test_interactive_console_refuses_a_bad_line_and_answers_the_next(tmp_path: Path) -> None:
    done = _console(tmp_path, "chat", "--session", "bytes", data=INPUT)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    out = done.stdout.decode("utf-8")
    assert f"! {NOT_UTF8.format(byte=3)}\n" in out
    assert f"! {NOT_UTF8.format(byte=0)}\n" in out
    assert "[main #1]" in out and "[main #2]" in out and "[main #3]" not in out


def test_run_console_refuses_a_bad_line_and_goes_on(tmp_path: Path) -> None:
    done = _console(tmp_path, "run", data=INPUT)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    out = done.stdout.decode("utf-8")
    assert f"! {NOT_UTF8.format(byte=3)}\n" in out
    assert "[main #2]" in out
