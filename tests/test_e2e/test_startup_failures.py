"""Start-up failures through real ``tavernbot`` processes: one clear line on standard error
(what failed, where, which setting, what to try), a documented exit code, no traceback and no
"Unclosed" warnings from clients left open."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import EXIT_UNAVAILABLE
from tests.conftest import ROOT
from tests.test_e2e.console import chat_env

pytestmark = pytest.mark.timeout(120)
PROCESS_TIMEOUT_S = 90.0
"""How long one failing process may take before the test fails (it should fail at once)."""
LOCATION_LINE = "tavernbot: database "


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def tavernbot(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``tavernbot ARGS`` with no input and return its outcome."""
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
        check=False,
    )


def assert_one_line(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    """The single stderr line, checked for the needles and for noise."""
    err = result.stderr
    assert "Traceback" not in err and "Unclosed" not in err, err
    # ``run`` and ``chat`` first say where the database is ("tavernbot: database PATH"):
    # an announcement, not part of the failure.
    lines = [
        line for line in err.splitlines() if line.strip() and not line.startswith(LOCATION_LINE)
    ]
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], err
    return lines[0]


@pytest.mark.parametrize(
    "args", [("run",), ("chat",), ("db", "upgrade"), ("memory", "list", "--session", "s")]
)
def test_a_database_path_under_a_file_is_one_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    env = chat_env(blocker / "x.db", None)
    result = tavernbot(env, *args, cwd=tmp_path)
    assert result.returncode == EXIT_UNAVAILABLE
    line = assert_one_line(result, str(blocker), "is a file, not a folder", "DATABASE_URL")
    assert line.startswith("tavernbot: cannot open the database")


def test_an_unreachable_database_server_is_one_line(tmp_path: Path) -> None:
    env = chat_env(tmp_path / "unused.db", None)
    port = closed_port()
    env["DATABASE_URL"] = f"postgresql+asyncpg://postgres:s3cret@127.0.0.1:{port}/test"
    result = tavernbot(env, "chat", cwd=tmp_path)
    assert result.returncode == EXIT_UNAVAILABLE
    line = assert_one_line(result, f"127.0.0.1:{port}", "check that the server is running")
    assert "s3cret" not in line


def test_db_upgrade_says_what_it_created(tmp_path: Path) -> None:
    db = tmp_path / "fresh.db"
    env = chat_env(db, None)
    first = tavernbot(env, "db", "upgrade", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert f"created the database at sqlite+aiosqlite:///{db} (schema " in first.stdout
    again = tavernbot(env, "db", "upgrade", cwd=tmp_path)
    assert "database is up to date" in again.stdout and "created" not in again.stdout


def test_doctor_reports_a_database_path_under_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    result = tavernbot(chat_env(blocker / "x.db", None), "doctor", cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "FAIL  database: cannot open the database" in result.stdout
