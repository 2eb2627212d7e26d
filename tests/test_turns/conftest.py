"""Fixtures: a TavernService on a SQLite file database, with the offline model or a model
pointed at the loopback fake OpenAI server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from adapters.llm import ChatModelPool, OfflineChatModel
from adapters.storage import SqlStorage, open_storage
from bot.scheduler import build_memory_service
from engine.ports import ChatModel, Event
from engine.turns.api import SessionKey, Speaker, UserLine
from engine.turns.profiles import LLMProfile, NoSecretCipher, environment_profile
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer

KEY = SessionKey(platform="console", realm="local", key="test")
ANN = Speaker(id="u1", name="Ann")


def line(text: str, speaker: Speaker = ANN) -> UserLine:
    """One user message."""
    return UserLine(speaker=speaker, text=text)


class Recorder:
    """An event sink that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def names(self) -> list[str]:
        return [e.name for e in self.events]


@pytest.fixture
async def storage(tmp_path: Path) -> AsyncIterator[SqlStorage]:
    db = await open_storage(f"sqlite+aiosqlite:///{tmp_path}/turns.db")
    yield db
    await db.close()


@pytest.fixture
def events() -> Recorder:
    return Recorder()


def offline_service(storage: SqlStorage, events: Recorder, **kwargs: object) -> TavernService:
    """A service answering with the offline model."""
    model = OfflineChatModel(announce=False)
    return TavernService(
        storage,
        model_for=lambda profile: model,
        default_profile=environment_profile(provider="offline", base_url=None, model="offline"),
        events=events,
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.fixture
async def service(storage: SqlStorage, events: Recorder) -> TavernService:
    svc = offline_service(storage, events)
    await svc.start()
    await svc.open_session(KEY)
    return svc


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer(max_requests=150, hang_limit_s=10.0, lifetime_s=90.0) as server:
        yield server


def pool_model_for(pool: ChatModelPool) -> Callable[[LLMProfile], ChatModel]:
    """Models for profiles, through the shared pool (the real openai client)."""
    return lambda profile: pool.for_profile(profile, NoSecretCipher(), {})


@pytest.fixture
async def remote(
    storage: SqlStorage, events: Recorder, fake: FakeOpenAIServer
) -> AsyncIterator[TavernService]:
    """A service whose default profile calls the fake server with no retries."""
    pool = ChatModelPool()
    default = LLMProfile(
        id="environment",
        provider="openai",
        base_url=fake.base_url,
        model="fake-model",
        timeout_s=10.0,
        max_retries=0,
    )
    svc = TavernService(
        storage, model_for=pool_model_for(pool), default_profile=default, events=events
    )
    await svc.start()
    await svc.open_session(KEY)
    yield svc
    await pool.aclose()


@pytest.fixture
async def remembering(
    storage: SqlStorage, events: Recorder, fake: FakeOpenAIServer
) -> AsyncIterator[TavernService]:
    """A service on the fake model server with the memory service the app builds."""
    pool = ChatModelPool()
    default = LLMProfile(
        id="environment", base_url=fake.base_url, model="fake-model", max_retries=0
    )
    memory = build_memory_service(storage, model=None, model_name="fake-model", events=events)
    svc = TavernService(
        storage,
        model_for=pool_model_for(pool),
        default_profile=default,
        events=events,
        memory=memory,
    )
    await svc.start()
    await svc.open_session(KEY)
    yield svc
    await svc.aclose()
    await pool.aclose()
