"""Nothing leaks through a turn: a message with NUL is answered on SQLite and PostgreSQL alike
(never "the turn failed: ... [SQL: ...]"), and a model URL's credentials and the API key reach
neither the user's error, nor the failed floor's stored error, nor the export."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text

from adapters.llm import ChatModelPool
from adapters.storage import SqlStorage
from engine.errors import GenerationError
from engine.turns.api import MAIN_BRANCH
from engine.turns.profiles import LLMProfile, NoSecretCipher
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeError, FakeOpenAIServer
from tests.test_storage.conftest import BACKENDS
from tests.test_storage.support import open_test_storage
from tests.test_turns.conftest import KEY, Recorder, line, offline_service

PASSWORD = "pw-hunter2"
API_KEY = "sk-turn-DO-NOT-LEAK-42"


@pytest.fixture(params=BACKENDS)
async def either(
    request: pytest.FixtureRequest, tmp_path: Path, pg_url: str
) -> AsyncIterator[SqlStorage]:
    async with open_test_storage(request.param, tmp_path=tmp_path, pg_url=pg_url) as storage:
        yield storage


async def stored_errors(storage: SqlStorage) -> list[str]:
    async with storage.read() as uow:
        rows = await uow.connection.execute(
            text("SELECT error FROM floor UNION ALL SELECT error FROM page")
        )
        return [row[0] for row in rows if row[0]]


async def test_a_message_with_nul_is_answered(either: SqlStorage, events: Recorder) -> None:
    service = offline_service(either, events)
    await service.start()
    await service.open_session(KEY)
    view = await service.respond(KEY, MAIN_BRANCH, [line("hello\x00there \ud800!")])
    assert view.floor == 1 and view.text
    history = await service.history(KEY, MAIN_BRANCH)
    assert [v.floor for v in history] == [1]
    exported = (await service.export_chat(KEY, MAIN_BRANCH)).decode()
    assert "hello\\ufffdthere \\ufffd!" in exported or "hello\ufffdthere \ufffd!" in exported
    second = await service.respond(KEY, MAIN_BRANCH, [line("and again")])
    assert second.floor == 2
    assert await stored_errors(either) == []
    await service.aclose()


async def test_model_url_credentials_reach_no_user_no_stored_error_no_export(
    storage: SqlStorage, events: Recorder, fake: FakeOpenAIServer
) -> None:
    host = fake.base_url.removeprefix("http://")
    pool = ChatModelPool()
    profile = LLMProfile(
        id="environment",
        provider="openai",
        base_url=f"http://alice:{PASSWORD}@{host}",
        model="fake-model",
        timeout_s=10.0,
        max_retries=0,
        api_key_ref="LLM_API_KEY",
    )
    service = TavernService(
        storage,
        model_for=lambda p: pool.for_profile(p, NoSecretCipher(), {"LLM_API_KEY": API_KEY}),
        default_profile=profile,
        events=events,
    )
    await service.start()
    await service.open_session(KEY)
    fake.script(FakeError(status=500, message=f"key {API_KEY} refused at {profile.base_url}"))
    try:
        with pytest.raises(GenerationError) as caught:
            await service.respond(KEY, MAIN_BRANCH, [line("hello")])
        errors = await stored_errors(storage)
        exported = (await service.export_chat(KEY, MAIN_BRANCH, include_hidden=True)).decode()
    finally:
        await service.aclose()
        await pool.aclose()
    assert errors, "the failed turn keeps its error"
    failed_events = [str(e.payload) for e in events.events if e.name == "generation.failed"]
    for shown in [str(caught.value), *errors, exported, *failed_events]:
        assert PASSWORD not in shown and "alice" not in shown and API_KEY not in shown, shown
