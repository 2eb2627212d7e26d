"""Start-up failures through real ``tavernbot`` processes: one clear line on standard error
(what failed, where, which setting, what to try), a documented exit code, no traceback and no
"Unclosed" warnings from clients left open."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.telegram.config import NETWORK_RETRIES
from bot.cli import EXIT_UNAVAILABLE, EXIT_USAGE
from tests.conftest import ROOT
from tests.fakes.discord import FakeDiscord, Limits
from tests.fakes.telegram.server import FakeTelegramServer
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
    "args",
    [
        ("run",),
        ("chat",),
        ("db", "upgrade"),
        ("memory", "list", "--session", "s"),
        ("export", "worldbook", "Lore"),
        ("import", "worldbook", "lore.json"),
    ],
)
def test_a_database_path_under_a_file_is_one_line(tmp_path: Path, args: tuple[str, ...]) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("not a folder")
    (tmp_path / "lore.json").write_text('{"entries": {}}')
    env = chat_env(blocker / "x.db", None)
    result = tavernbot(env, *args, cwd=tmp_path)
    assert result.returncode == EXIT_UNAVAILABLE
    line = assert_one_line(result, str(blocker), "is a file, not a folder", "DATABASE_URL")
    assert line.startswith("tavernbot: cannot open the database")


def test_an_unreachable_database_server_is_one_line(tmp_path: Path) -> None:
    env = chat_env(tmp_path / "unused.db", None)
    port = closed_port()
    # the password must not be shown
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


TELEGRAM_TOKEN = "123456:" + "T" * 35


async def tavernbot_async(
    env: dict[str, str], *args: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """:func:`tavernbot` without blocking the loop (a loopback fake runs on it)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), PROCESS_TIMEOUT_S)
    assert proc.returncode is not None
    return subprocess.CompletedProcess(args, proc.returncode, out.decode(), err.decode())


def assert_one_failure(result: subprocess.CompletedProcess[str], *needles: str) -> str:
    """The one failure line, last on stderr, checked for the needles and for noise.

    A platform starts after the engine, so the lines the engine logs while starting (the
    offline model's notice, a library's own warnings) may come first; the failure itself
    is still one line, and there is no traceback.
    """
    err = result.stderr
    assert "Traceback" not in err and "Unclosed" not in err, err
    ours = [
        line
        for line in err.splitlines()
        if line.startswith("tavernbot: ") and not line.startswith(LOCATION_LINE)
    ]
    assert len(ours) == 1 and err.strip().splitlines()[-1] == ours[0], err
    for needle in needles:
        assert needle in ours[0], err
    return ours[0]


def platform_env(tmp_path: Path, section: str, **keys: str) -> tuple[dict[str, str], Path]:
    """The environment and a config file setting ``[section]`` ``keys``."""
    config = tmp_path / "tavernbot.toml"
    body = "".join(f'{key} = "{value}"\n' for key, value in keys.items())
    config.write_text(f"[{section}]\n{body}")
    return chat_env(tmp_path / "bot.db", None), config


async def test_telegram_unreachable_is_one_line(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    env, config = platform_env(tmp_path, "telegram", api_base=base)
    env["TELEGRAM_TOKEN"] = TELEGRAM_TOKEN
    result = await tavernbot_async(env, "--config", str(config), "run", cwd=tmp_path)
    assert result.returncode == EXIT_UNAVAILABLE
    assert "Traceback" not in result.stderr and "Unclosed" not in result.stderr
    line = assert_one_failure(result, "[telegram] api_base")
    assert line.startswith(f"tavernbot: cannot reach the Telegram Bot API at {base}")
    # one progress line per bounded retry
    retries = [x for x in result.stderr.splitlines() if "retrying in" in x]
    assert len(retries) == NETWORK_RETRIES, result.stderr
    assert TELEGRAM_TOKEN not in result.stderr


async def test_telegram_refused_token_is_one_line(tmp_path: Path) -> None:
    async with FakeTelegramServer(token=TELEGRAM_TOKEN, max_lifetime_s=60.0) as tg:
        env, config = platform_env(tmp_path, "telegram", api_base=tg.base_url)
        env["TELEGRAM_TOKEN"] = "654321:" + "W" * 35
        result = await tavernbot_async(env, "--config", str(config), "run", cwd=tmp_path)
    assert result.returncode == EXIT_USAGE
    line = assert_one_failure(result, "Telegram token", "was refused by", "TELEGRAM_TOKEN")
    assert "W" * 35 not in line


async def test_discord_unreachable_is_one_line(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{closed_port()}/api/v10"
    env, config = platform_env(tmp_path, "discord", api_base=base)
    env["DISCORD_TOKEN"] = "A" * 24 + "." + "B" * 6 + "." + "C" * 27
    result = await tavernbot_async(env, "--config", str(config), "run", cwd=tmp_path)
    assert result.returncode == EXIT_UNAVAILABLE
    assert_one_failure(result, f"cannot reach the Discord API at {base}", "[discord] api_base")


async def test_discord_refused_token_is_one_line(tmp_path: Path) -> None:
    fake = await FakeDiscord(limits=Limits(max_lifetime_s=60, max_requests=200)).start()
    try:
        env, config = platform_env(
            tmp_path, "discord", api_base=fake.api_base, gateway_url=fake.gateway_url
        )
        env["DISCORD_TOKEN"] = "A" * 24 + "." + "B" * 6 + "." + "C" * 27
        result = await tavernbot_async(env, "--config", str(config), "run", cwd=tmp_path)
    finally:
        await fake.stop()
    assert result.returncode == EXIT_USAGE
    assert_one_failure(result, "Discord token", "was refused by", "DISCORD_TOKEN")


def test_the_readme_documents_every_exit_code() -> None:
    from bot.cli import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    codes = (EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_INTERRUPTED)
    for code in codes:
        assert f"\n| {code} | " in readme, code


async def test_discord_gateway_unreachable_is_one_line(tmp_path: Path) -> None:
    token = "A" * 24 + "." + "B" * 6 + "." + "C" * 27
    fake = await FakeDiscord(
        token=token, limits=Limits(max_lifetime_s=60, max_requests=200)
    ).start()
    gateway = f"ws://127.0.0.1:{closed_port()}"
    try:
        env, config = platform_env(
            tmp_path, "discord", api_base=fake.api_base, gateway_url=gateway
        )
        env["DISCORD_TOKEN"] = token
        result = await tavernbot_async(env, "--config", str(config), "run", cwd=tmp_path)
    finally:
        await fake.stop()
    assert result.returncode == EXIT_UNAVAILABLE
    assert_one_failure(result, f"cannot reach the Discord gateway at {gateway}", "gateway_url")
