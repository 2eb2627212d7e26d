"""``tavernbot run`` serves the web page from its own process and prints the first token once;
``tavernbot web token`` issues new ones (the running page accepts them at once); ``config
check`` warns about a page reachable in clear text. Real processes, each bounded in time."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import sys
from pathlib import Path

import aiohttp
import pytest

from bot.cli import main
from bot.cli_commands.web import issue

pytestmark = pytest.mark.timeout(120)
STEP_TIMEOUT_S = 60.0
"""How long one step (a line on standard error, a request, the exit) may take."""


def _config(directory: Path, web: str) -> Path:
    path = directory / "tavernbot.toml"
    path.write_text(
        f'[database]\nurl = "sqlite+aiosqlite:///{directory / "bot.db"}"\n'
        f'[console]\nsession = "tavern"\n[web]\n{web}',
        encoding="utf-8",
    )
    return path


async def _line_with(stream: asyncio.StreamReader, word: str) -> str:
    while True:
        line = (await asyncio.wait_for(stream.readline(), STEP_TIMEOUT_S)).decode()
        if not line:
            raise AssertionError(f"standard error ended before a line with {word!r}")
        if word in line:
            return line


async def test_run_serves_the_page_and_web_token_issues_more(tmp_path: Path) -> None:
    config = _config(tmp_path, "port = 0\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "DISCORD", "TELEG"))}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "--config",
        str(config),
        "run",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        assert proc.stderr is not None and proc.stdin is not None
        url = re.search(r"web page at (\S+)", await _line_with(proc.stderr, "web page at"))
        token = (await _line_with(proc.stderr, "web access token")).rsplit(" ", 1)[1].strip()
        assert url is not None
        base = url.group(1).rstrip("/")
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(STEP_TIMEOUT_S)) as http:
            listed = await http.get(
                f"{base}/api/sessions", headers={"Authorization": f"Bearer {token}"}
            )
            assert listed.status == 200
            assert [s["place"] for s in (await listed.json())["sessions"]] == ["tavern"]
            assert (await http.get(f"{base}/api/sessions")).status == 401
            # a new read-only token (what 'tavernbot web token' prints) works at once
            fresh = await issue(
                f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}", kind="read", realm=None, label=None
            )
            head = {"Authorization": f"Bearer {fresh}"}
            assert (await http.get(f"{base}/api/sessions", headers=head)).status == 200
            write = await http.post(
                f"{base}/api/sessions/1/variables", json={"name": "x", "value": 1}, headers=head
            )
            assert write.status == 403
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), STEP_TIMEOUT_S)
        assert proc.returncode == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            with contextlib.suppress(ProcessLookupError):
                await proc.wait()


async def test_web_token_prints_a_working_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, "")
    args = ["--config", str(config), "web", "token", "--realm", "console:local"]
    assert await asyncio.to_thread(main, args) == 0
    token = capsys.readouterr().out.strip()
    assert len(token) >= 40
    from adapters.storage import open_storage
    from adapters.storage.web_repo import SqlWebTokens
    from adapters.web.auth import digest_of

    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    try:
        stored = await SqlWebTokens(storage).find(digest_of(token))
    finally:
        await storage.close()
    assert stored is not None and (stored.kind, stored.realm) == ("admin", "console:local")
    bad = ["--config", str(config), "web", "token", "--realm", "nocolon"]
    assert await asyncio.to_thread(main, bad) == 2


def test_config_check_warns_about_clear_text_off_loopback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exposed = _config(tmp_path, 'host = "0.0.0.0"\n')
    assert main(["--config", str(exposed), "config", "check"]) == 0
    out = capsys.readouterr().out
    assert "web: http://0.0.0.0:8765/" in out and "warning:" in out and "tls_cert" in out
    proxied = _config(tmp_path, 'host = "0.0.0.0"\nbehind_proxy = true\n')
    assert main(["--config", str(proxied), "config", "check"]) == 0
    assert "warning:" not in capsys.readouterr().out
    half = _config(tmp_path, 'tls_cert = "c.pem"\n')
    assert main(["--config", str(half), "config", "check"]) == 2


async def test_a_taken_port_leaves_the_bot_running_without_its_page(tmp_path: Path) -> None:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    try:
        port = holder.getsockname()[1]
        config = _config(tmp_path, f"port = {port}\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "DISCORD"))}
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "--config",
            str(config),
            "run",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(b"/info\n"), STEP_TIMEOUT_S)
        finally:
            if proc.returncode is None:
                proc.kill()
                with contextlib.suppress(ProcessLookupError):
                    await proc.wait()
        assert proc.returncode == 0, err.decode()
        assert "the web page is off" in err.decode() and "web access token" not in err.decode()
        assert "session tavern" in out.decode()  # the console played on
    finally:
        holder.close()


async def test_web_alone_serves_until_sigterm(tmp_path: Path) -> None:
    config = _config(tmp_path, "port = 0\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "DISCORD"))}
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "--config",
        str(config),
        "web",
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    try:
        assert proc.stderr is not None
        url = re.search(r"web page at (\S+)", await _line_with(proc.stderr, "web page at"))
        token = (await _line_with(proc.stderr, "web access token")).rsplit(" ", 1)[1].strip()
        assert url is not None
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(STEP_TIMEOUT_S)) as http:
            head = {"Authorization": f"Bearer {token}"}
            listed = await http.get(f"{url.group(1)}api/sessions", headers=head)
            assert listed.status == 200 and (await listed.json())["sessions"] == []
        proc.terminate()
        await asyncio.wait_for(proc.wait(), STEP_TIMEOUT_S)
        assert proc.returncode == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            with contextlib.suppress(ProcessLookupError):
                await proc.wait()
