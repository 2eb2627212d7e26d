"""The turn service's chat import and export (Discord ``/session import|export``, Telegram
``/import``, ``/export``): a user message without a reply is kept and exported as a normal
line; a file with a line that is not JSON is refused whole, before anything is written."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from adapters.storage import SqlStorage
from engine.errors import FormatError
from engine.timeline.values import NewMessage
from engine.turns.api import SessionKey
from engine.turns.service import TavernService
from tests.test_storage.conftest import storage
from tests.test_turns.conftest import Recorder, offline_service

__all__ = ["storage"]

KEY = SessionKey(platform="discord", realm="guild", key="channel")
HEADER = {"user_name": "Ann", "character_name": "Mira", "chat_metadata": {}}
GREETING = {"name": "Mira", "is_user": False, "mes": "Hello, Ann."}
WAITING = {"name": "Ann", "is_user": True, "mes": "Are you there?"}


@pytest.fixture
async def offline_engine(storage: SqlStorage) -> AsyncIterator[TavernService]:
    """The turn service with the offline model, on SQLite and on PostgreSQL."""
    service = offline_service(storage, Recorder())
    await service.start()
    try:
        yield service
    finally:
        await service.aclose()


def _jsonl(*lines: dict[str, Any]) -> bytes:
    return "\n".join(json.dumps(line) for line in lines).encode()


def _lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode().splitlines()][1:]


async def test_an_imported_trailing_user_message_is_kept_and_exported(
    offline_engine: TavernService,
) -> None:
    await offline_engine.open_session(KEY)
    summary = await offline_engine.import_asset(
        KEY, "chat", "woods.jsonl", _jsonl(HEADER, GREETING, WAITING)
    )
    branch = summary.details["branch"]
    out = _lines(await offline_engine.export_chat(KEY, branch))
    assert [(o["name"], o["is_user"], o["mes"]) for o in out] == [
        ("Mira", False, GREETING["mes"]),
        ("Ann", True, WAITING["mes"]),
    ]
    assert out[-1].get("is_system", False) is False  # absent, as it came: a normal line


async def test_a_message_waiting_for_its_reply_is_exported(offline_engine: TavernService) -> None:
    await offline_engine.open_session(KEY)
    ids = await offline_engine.parts.sessions.ids(KEY)
    main = await offline_engine.parts.sessions.branch(ids.session_id, "main")
    waiting = NewMessage(role="user", raw="first, no reply yet", speaker_name="Ann")
    floor = await offline_engine.timeline.open_floor(main.id, [waiting])
    assert [o["mes"] for o in _lines(await offline_engine.export_chat(KEY, "main"))] == [
        "first, no reply yet"
    ]
    await offline_engine.timeline.fail_floor(floor.id, "the model did not answer")
    again = NewMessage(role="user", raw="second try", speaker_name="Ann")
    await offline_engine.timeline.open_floor(main.id, [again])
    out = _lines(await offline_engine.export_chat(KEY, "main"))
    assert [(o["is_user"], o["mes"]) for o in out] == [
        (True, "first, no reply yet"),
        (True, "second try"),
    ]


async def test_a_line_that_is_not_json_refuses_the_import(offline_engine: TavernService) -> None:
    await offline_engine.open_session(KEY)
    before = await offline_engine.session_info(KEY)
    data = _jsonl(HEADER, GREETING) + b"\n{oops\n" + _jsonl(WAITING)
    with pytest.raises(FormatError) as info:
        await offline_engine.import_asset(KEY, "chat", "dirty.jsonl", data)
    assert "line 3: not JSON" in str(info.value) and "\n" not in str(info.value)
    assert "nothing was imported" in str(info.value)
    after = await offline_engine.session_info(KEY)
    assert [b.name for b in after.branches] == [b.name for b in before.branches]
