"""An unexpected failure in a turn (here a driver-like error quoting SQL and the player's
words) reaches the console, plain and ``--jsonl``, only as one line with an error id; the log
has the details under the same id, and the failed floor keeps only the safe line."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from adapters.console.frontend import ConsoleFrontend
from adapters.llm import OfflineChatModel
from adapters.storage import SqlStorage, open_storage
from engine.ports import ChatRequest
from engine.turns.api import SessionKey
from engine.turns.profiles import environment_profile
from engine.turns.service import TavernService

pytestmark = pytest.mark.timeout(60)
KEY = SessionKey(platform="console", realm="local", key="safe-errors")
SECRET = "my very private words"
RAW = (
    "(sqlalchemy.dialects.postgresql.asyncpg.Error) invalid byte sequence "
    f"[SQL: INSERT INTO message (raw) VALUES ($1)] [parameters: ('{SECRET}',)]"
)
ERROR_LINE = re.compile(r"^the turn failed \(error ([0-9a-f]{6})\)$")


class BrokenModel(OfflineChatModel):
    """A model whose every call fails with a raw, leaky, non-engine error."""

    def stream(self, request: ChatRequest) -> Any:
        raise RuntimeError(RAW)


@pytest.fixture
async def broken(tmp_path: Path) -> AsyncIterator[tuple[TavernService, SqlStorage]]:
    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path}/broken.db")
    model = BrokenModel(announce=False)
    service = TavernService(
        storage,
        model_for=lambda p: model,
        default_profile=environment_profile(provider="offline", base_url=None, model="x"),
    )
    await service.start()
    await service.open_session(KEY)
    try:
        yield service, storage
    finally:
        await service.aclose()
        await storage.close()


async def stored_errors(storage: SqlStorage) -> list[str]:
    async with storage.read() as uow:
        rows = await uow.connection.execute(
            text("SELECT error FROM floor UNION ALL SELECT error FROM page")
        )
        return [row[0] for row in rows if row[0]]


async def test_jsonl_shows_one_safe_line_and_the_log_has_the_details(
    broken: tuple[TavernService, SqlStorage], caplog: pytest.LogCaptureFixture
) -> None:
    service, storage = broken
    out = io.StringIO()
    console = ConsoleFrontend(service=service, key=KEY, user="Ann", out=out, jsonl=True)
    with caplog.at_level(logging.ERROR):
        assert await console.handle_line(f"hello, {SECRET}")
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    errors = [r["message"] for r in rows if r["type"] == "error"]
    assert len(errors) == 1
    found = ERROR_LINE.match(errors[0])
    assert found, errors[0]
    assert "SQL" not in out.getvalue() and SECRET not in out.getvalue()
    logged = [r for r in caplog.records if found.group(1) in r.getMessage()]
    assert logged and "INSERT INTO message" in logged[0].getMessage()
    for error in await stored_errors(storage):
        assert "SQL" not in error and SECRET not in error
    assert await stored_errors(storage), "the failed turn is recorded"


async def test_plain_console_shows_the_same_line(
    broken: tuple[TavernService, SqlStorage],
) -> None:
    service, _ = broken
    out = io.StringIO()
    console = ConsoleFrontend(service=service, key=KEY, user="Ann", out=out)
    assert await console.handle_line("hello")
    lines = [line for line in out.getvalue().splitlines() if line.startswith("! ")]
    assert len(lines) == 1 and ERROR_LINE.match(lines[0][2:]), out.getvalue()
    assert "SQL" not in out.getvalue()
