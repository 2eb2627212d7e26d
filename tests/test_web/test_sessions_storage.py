"""The session directory and the token store on SQLite and PostgreSQL: sessions with their
realm and newest activity, newest first, by realm; token digests found, counted, revoked."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.storage.web_repo import SqlSessionDirectory, SqlWebTokens
from engine.timeline.service import TimelineService
from engine.turns.events import NullSink
from tests.test_storage.support import open_test_storage


@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def test_directory_and_tokens(kind: str, tmp_path: Path, pg_url: str) -> None:
    async with open_test_storage(kind, tmp_path=tmp_path, pg_url=pg_url) as storage:
        timeline = TimelineService(storage, NullSink())
        quiet = await timeline.open_session("console", "local", "quiet")
        busy = await timeline.open_session("discord", "guild-1", "channel-9")
        floor = await timeline.open_floor(busy.main.id)
        assert floor.seq == 1
        directory = SqlSessionDirectory(storage)
        listed = await directory.sessions()
        assert [e.key for e in listed] == ["channel-9", "quiet"]  # newest activity first
        assert listed[0].realm == "discord:guild-1" and listed[0].last_activity is not None
        assert listed[1].last_activity is None
        only = await directory.sessions(realm="console:local")
        assert [e.key for e in only] == ["quiet"]
        one = await directory.session(quiet.session.id)
        assert one is not None and one.realm == "console:local"
        assert await directory.session(10_000) is None

        tokens = SqlWebTokens(storage)
        assert await tokens.count() == 0
        stored = await tokens.add("d" * 64, kind="read", realm="console:local", label="x")
        assert (stored.kind, stored.realm) == ("read", "console:local")
        assert await tokens.find("d" * 64) is not None and await tokens.count() == 1
        assert await tokens.revoke("x") == 1 and await tokens.find("d" * 64) is None
