"""``doctor`` checks the platform tokens for real: Discord's ``users/@me`` and Telegram's
``getMe`` against the loopback fakes (accepted, refused), a closed port (unreachable) and a
server that never answers (the named timeout)."""

from __future__ import annotations

import io
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli_commands import token_checks
from bot.cli_commands.doctor import Report, check
from bot.config import load_settings
from tests.fakes.discord import FakeDiscord, Limits
from tests.fakes.telegram.server import FakeTelegramServer
from tests.test_e2e.console import chat_env
from tests.test_e2e.test_startup_failures import closed_port

pytestmark = pytest.mark.timeout(60)
DISCORD = "A" * 24 + "." + "B" * 6 + "." + "C" * 27
TELEGRAM = "123456:" + "T" * 35


async def doctor(tmp_path: Path, **env_and_sections: str) -> tuple[int, list[str]]:
    """Run the doctor's checks; returns the exit code and the token lines."""
    env = chat_env(tmp_path / "d.db", None)
    sections: dict[str, dict[str, str]] = {}
    for name, value in env_and_sections.items():
        if name.isupper():
            env[name] = value
        else:
            section, key = name.split("__")
            sections.setdefault(section, {})[key] = value
    settings = load_settings(environ=env)
    for section, values in sections.items():
        part = getattr(settings, section).model_copy(update=values)
        settings = settings.model_copy(update={section: part})
    out = io.StringIO()
    code = await check(settings, Report(out))
    lines = [
        line
        for line in out.getvalue().splitlines()
        if " token: " in line and "not configured" not in line
    ]
    return code, lines


async def test_a_good_discord_token_passes_and_a_refused_one_fails(tmp_path: Path) -> None:
    fake = await FakeDiscord(token=DISCORD, limits=Limits(max_lifetime_s=50)).start()
    try:
        _, good = await doctor(tmp_path, DISCORD_TOKEN=DISCORD, discord__api_base=fake.api_base)
        code, bad = await doctor(
            tmp_path, DISCORD_TOKEN="Z" + DISCORD[1:], discord__api_base=fake.api_base
        )
    finally:
        await fake.stop()
    assert any(line.startswith("ok    discord token: accepted by") for line in good), good
    assert code == 1
    refused = [line for line in bad if line.startswith("FAIL  discord token")]
    assert len(refused) == 1 and "refused by" in refused[0] and DISCORD[1:] not in refused[0]


async def test_a_good_telegram_token_passes_and_a_refused_one_fails(tmp_path: Path) -> None:
    async with FakeTelegramServer(token=TELEGRAM, max_lifetime_s=50.0) as tg:
        _, good = await doctor(tmp_path, TELEGRAM_TOKEN=TELEGRAM, telegram__api_base=tg.base_url)
        code, bad = await doctor(
            tmp_path, TELEGRAM_TOKEN="654321:" + "W" * 35, telegram__api_base=tg.base_url
        )
    assert any(line.startswith("ok    telegram token: accepted by") for line in good), good
    assert code == 1
    refused = [line for line in bad if line.startswith("FAIL  telegram token")]
    assert len(refused) == 1 and "refused by" in refused[0] and "W" * 35 not in refused[0]


async def test_an_unreachable_platform_is_one_line(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    code, lines = await doctor(tmp_path, TELEGRAM_TOKEN=TELEGRAM, telegram__api_base=base)
    assert code == 1
    assert lines == [f"FAIL  telegram token: {lines[0].split(': ', 1)[1]}"]
    assert f"cannot reach {base} ([telegram] api_base)" in lines[0]


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A loopback port that accepts connections and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield sock.getsockname()[1]


async def test_a_platform_that_never_answers_fails_at_the_named_timeout(
    tmp_path: Path, silent_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(token_checks, "TOKEN_CHECK_TIMEOUT_S", 0.2)
    base = f"http://127.0.0.1:{silent_port}/api/v10"
    code, lines = await doctor(tmp_path, DISCORD_TOKEN=DISCORD, discord__api_base=base)
    assert code == 1
    assert lines == [
        f"FAIL  discord token: cannot reach {base} ([discord] api_base): no answer within 0.2s"
    ]
