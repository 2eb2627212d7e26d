"""``tavernbot web token --list`` shows the stored tokens (label, kind, realm, created, last
used; never a token) and ``--revoke LABEL`` deletes every token with that label, after which
the page refuses it. A token's last use is written at most every LAST_USED_EVERY_S."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from adapters.storage import open_storage
from adapters.storage.web_models import WEB_TOKEN
from adapters.storage.web_repo import LAST_USED_EVERY_S, SqlWebTokens
from adapters.web.auth import Gate, digest_of
from bot.cli import main

pytestmark = pytest.mark.timeout(60)


def _config(directory: Path) -> Path:
    path = directory / "tavernbot.toml"
    path.write_text(
        f'[database]\nurl = "sqlite+aiosqlite:///{directory / "bot.db"}"\n', encoding="utf-8"
    )
    return path


async def _cli(config: Path, *args: str) -> int:
    return await asyncio.to_thread(main, ["--config", str(config), "web", "token", *args])


async def test_list_shows_tokens_and_revoke_removes_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path)
    assert await _cli(config, "--list") == 0
    assert "no web tokens" in capsys.readouterr().out
    assert await _cli(config, "--label", "ops", "--read-only", "--realm", "console:local") == 0
    reader = capsys.readouterr().out.strip()
    assert await _cli(config, "--label", "gm") == 0
    admin = capsys.readouterr().out.strip()

    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    try:
        gate = Gate(SqlWebTokens(storage))
        assert await gate.access(admin) is not None  # used once: its last use is noted
        assert await _cli(config, "--list") == 0
        table = capsys.readouterr().out
        lines = {line.split()[0]: line for line in table.splitlines()[1:]}
        assert table.splitlines()[0].split() == [
            "LABEL",
            "KIND",
            "REALM",
            "CREATED",
            "LAST",
            "USED",
        ]
        assert lines["ops"].split()[1:3] == ["read", "console:local"]
        assert lines["ops"].endswith("never")
        assert lines["gm"].split()[1:3] == ["admin", "(all)"] and "never" not in lines["gm"]
        assert reader not in table and admin not in table  # never a token itself

        assert await _cli(config, "--revoke", "ops") == 0
        assert "revoked 1 web token labelled 'ops'" in capsys.readouterr().out
        assert await gate.access(reader) is None  # refused from now on
        assert await gate.access(admin) is not None
        assert await _cli(config, "--revoke", "ops") == 1
        assert "no web token is labelled 'ops'" in capsys.readouterr().err
        with pytest.raises(SystemExit) as usage:  # one action at a time (argparse's exit)
            await _cli(config, "--list", "--revoke", "gm")
        assert usage.value.code == 2
        assert await gate.access(admin) is not None
    finally:
        await storage.close()


async def test_last_use_is_written_at_most_every_interval(tmp_path: Path) -> None:
    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}")
    try:
        tokens = SqlWebTokens(storage)
        digest = digest_of("a-token")
        await tokens.add(digest, kind="read", realm=None, label="t")
        first = await tokens.find(digest)
        assert first is not None and first.last_used_at is None  # as it was before this use
        noted = (await tokens.find(digest)).last_used_at  # type: ignore[union-attr]
        assert noted is not None
        assert (await tokens.find(digest)).last_used_at == noted  # type: ignore[union-attr]
        # Once the interval has passed the next use is written again.
        old = datetime.now(UTC) - timedelta(seconds=LAST_USED_EVERY_S + 5)
        async with storage.unit_of_work() as uow:
            await uow.connection.execute(update(WEB_TOKEN).values(last_used_at=old))
        await tokens.find(digest)
        newer = (await tokens.find(digest)).last_used_at  # type: ignore[union-attr]
        assert newer is not None and newer > old + timedelta(seconds=LAST_USED_EVERY_S)
    finally:
        await storage.close()
