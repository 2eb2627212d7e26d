"""Every real SillyTavern chat in the shared collection survives the turn service's import
(Discord ``/session import``, Telegram ``/import``) and export unchanged, compared as JSON:
each message's ``extra``, ``force_avatar``, ``gen_started``/``gen_finished``, swipes and
``swipe_info``, dates as they were spelt, the header's ``create_date`` and ``is_name``, and no
header where there was none (an old group chat). The chat's ``chat_metadata.variables``
become the session's chat-scope variables, and the export writes the current ones back."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.console.frontend import ConsoleFrontend
from adapters.storage import SqlStorage
from engine.errors import EngineError
from engine.turns.api import SessionKey
from engine.turns.service import TavernService
from engine.variables.values import MAX_KEY_LENGTH
from tests.conftest import SHARED
from tests.test_storage.conftest import storage
from tests.test_turns.conftest import Recorder, offline_service

__all__ = ["storage"]

CHATS = SHARED / "realworld" / "chats"
KEY = SessionKey(platform="discord", realm="guild", key="channel")
WITH_VARIABLES = CHATS / "stbl_Assistant_2026.jsonl"
KITT = CHATS / "mgb_KITT.jsonl"


def chat_files() -> list[Path]:
    """Every chat of the shared collection, read where it lies."""
    return sorted(CHATS.glob("*.jsonl"))


def objects(data: bytes | str) -> list[dict[str, Any]]:
    """The file's lines as JSON objects (empty lines skipped, as SillyTavern skips them)."""
    text = data.decode("utf-8") if isinstance(data, bytes) else data
    return [json.loads(line) for line in text.split("\n") if line.strip()]


@pytest.fixture
async def engine(storage: SqlStorage) -> AsyncIterator[TavernService]:
    """The turn service with the offline model, on SQLite and on PostgreSQL."""
    service = offline_service(storage, Recorder())
    await service.start()
    try:
        yield service
    finally:
        await service.aclose()


def test_the_collection_has_the_chats_the_issue_names() -> None:
    names = {p.name for p in chat_files()}
    assert {"mgb_group_2024-7-15.jsonl", "stbl_Assistant_2026.jsonl"} <= names
    assert len(names) >= 8


@pytest.mark.parametrize(
    ("name", "data"), [pytest.param(p.name, p.read_bytes(), id=p.name) for p in chat_files()]
)
async def test_an_untouched_chat_exports_as_it_was_imported(
    engine: TavernService, name: str, data: bytes
) -> None:
    await engine.open_session(KEY)
    summary = await engine.import_asset(KEY, "chat", name, data)
    exported = await engine.export_chat(KEY, summary.details["branch"])
    assert objects(exported) == objects(data)


async def test_chat_variables_become_chat_scope_variables_and_go_back_out(
    engine: TavernService,
) -> None:
    data = await asyncio.to_thread(WITH_VARIABLES.read_bytes)
    variables = objects(data)[0]["chat_metadata"]["variables"]
    assert len(variables) == 22
    await engine.open_session(KEY)
    summary = await engine.import_asset(KEY, "chat", WITH_VARIABLES.name, data)
    branch = summary.details["branch"]
    assert await engine.variables(KEY, branch, "chat") == variables
    assert await engine.preview(KEY, branch, "{{getvar::nsfw}}") == variables["nsfw"]
    await engine.set_variable(KEY, branch, "nsfw", "changed")
    await engine.set_variable(KEY, branch, "added", "1")
    header = objects(await engine.export_chat(KEY, branch))[0]
    assert header["chat_metadata"]["variables"] == {**variables, "nsfw": "changed", "added": "1"}


async def test_a_new_swipe_is_exported_beside_the_kept_fields(engine: TavernService) -> None:
    """A page generated after the import is a new swipe; the kept ones and every other line
    stay as they came, and swiping back gives the file back exactly."""
    path = KITT
    data = await asyncio.to_thread(path.read_bytes)
    original = objects(data)
    await engine.open_session(KEY)
    summary = await engine.import_asset(KEY, "chat", path.name, data)
    branch = summary.details["branch"]
    await engine.regenerate(KEY, branch)
    out = objects(await engine.export_chat(KEY, branch))
    assert out[:-1] == original[:-1]
    last, before = out[-1], original[-1]
    assert last["swipes"][0] == before["swipes"][0] and len(last["swipes"]) == 2
    assert (last["swipe_id"], last["mes"]) == (1, last["swipes"][1])
    assert last["swipe_info"][0] == before["swipe_info"][0]
    assert "send_date" in last["swipe_info"][1]
    await engine.swipe(KEY, branch, -1)
    out = objects(await engine.export_chat(KEY, branch))
    assert out[:-1] == original[:-1]
    assert {k: v for k, v in out[-1].items() if k not in ("swipes", "swipe_info")} == {
        k: v for k, v in before.items() if k not in ("swipes", "swipe_info")
    }


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ([1, 2], "chat_metadata.variables: expected an object, got"),
        ({"x" * (MAX_KEY_LENGTH + 1): "1"}, "MAX_KEY_LENGTH"),
    ],
)
async def test_bad_chat_variables_refuse_the_import_before_anything_is_stored(
    engine: TavernService, variables: object, expected: str
) -> None:
    header = {"user_name": "Ann", "character_name": "Mira", "chat_metadata": {}}
    header["chat_metadata"] = {"variables": variables}
    reply = {"name": "Mira", "is_user": False, "mes": "Hello."}
    data = "\n".join(json.dumps(line) for line in (header, reply)).encode()
    await engine.open_session(KEY)
    before = await engine.session_info(KEY)
    with pytest.raises(EngineError) as info:
        await engine.import_asset(KEY, "chat", "bad.jsonl", data)
    assert expected in str(info.value) and "bad.jsonl" in str(info.value)
    assert "\n" not in str(info.value)
    after = await engine.session_info(KEY)
    assert [b.name for b in after.branches] == [b.name for b in before.branches]
    assert await engine.variables(KEY, "main", "chat") == {}


async def test_the_console_shows_an_imported_chats_variables(engine: TavernService) -> None:
    """``/import FILE chat``, then ``/vars chat`` and ``{{getvar}}`` as a console user sees."""
    variables = objects(await asyncio.to_thread(WITH_VARIABLES.read_bytes))[0]["chat_metadata"][
        "variables"
    ]
    console_key = SessionKey(platform="console", realm="local", key="vars")
    await engine.open_session(console_key)
    out = io.StringIO()
    console = ConsoleFrontend(service=engine, key=console_key, user="Ann", out=out, jsonl=True)
    for line in (f"/import {WITH_VARIABLES} chat", "/vars chat"):
        assert await console.handle_line(line)
    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    assert {"type": "vars", "scope": "chat", "vars": variables} in rows
    assert await engine.preview(console_key, "main", "{{getvar::geshi}}") == variables["geshi"]
