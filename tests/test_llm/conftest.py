"""Fixtures: the loopback fake model server and an OpenAI chat model pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from adapters.llm.openai_model import OpenAIChatModel
from adapters.llm.retry import RetryPolicy
from tests.fakes.openai_server import FakeOpenAIServer

API_KEY = "sk-test-DO-NOT-LEAK-0123456789"


class RecordingSleep:
    """An injectable sleep that records the requested waits and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer(max_requests=50, hang_limit_s=10.0, lifetime_s=60.0) as fake:
        yield fake


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
async def model(server: FakeOpenAIServer, sleep: RecordingSleep) -> AsyncIterator[OpenAIChatModel]:
    chat = OpenAIChatModel(
        base_url=server.base_url,
        model="fake-model",
        api_key=API_KEY,
        timeout_s=10.0,
        retry=RetryPolicy(max_retries=3),
        sleep=sleep,
        jitter=lambda: 0.0,
    )
    yield chat
    await chat.aclose()
