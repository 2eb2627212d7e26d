"""The fake model server bounds itself: request limit, hang limit, lifetime."""

from __future__ import annotations

import asyncio

import pytest

from adapters.llm.openai_model import OpenAIChatModel
from adapters.llm.retry import RetryPolicy
from engine.errors import GenerationError
from engine.ports import ChatMessage, ChatRequest
from tests.fakes.openai_server import FakeHang, FakeOpenAIServer, FakeReply

REQUEST = ChatRequest(model="", messages=[ChatMessage(role="user", content="ping")])


def _client(server: FakeOpenAIServer) -> OpenAIChatModel:
    return OpenAIChatModel(
        base_url=server.base_url, model="fake-model", retry=RetryPolicy(max_retries=0)
    )


async def test_request_limit_answers_503() -> None:
    async with FakeOpenAIServer(max_requests=2) as server:
        chat = _client(server)
        try:
            await chat.complete(REQUEST)
            await chat.complete(REQUEST)
            with pytest.raises(GenerationError, match="503"):
                await chat.complete(REQUEST)
        finally:
            await chat.aclose()
        assert server.overflow == 1
        assert len(server.requests) == 3


async def test_hang_ends_at_the_hang_limit() -> None:
    async with FakeOpenAIServer(hang_limit_s=0.2) as server:
        server.script(FakeHang())
        chat = _client(server)
        try:
            with pytest.raises(GenerationError):
                await chat.complete(REQUEST)
        finally:
            await chat.aclose()
        recorded = await server.wait_done(0)
        assert not recorded.finished
        assert not recorded.disconnected  # the server gave up, not the client


async def test_server_stops_itself_after_its_lifetime() -> None:
    server = FakeOpenAIServer(lifetime_s=0.2)
    await server.start()
    try:
        await asyncio.wait_for(server._stopping.wait(), 5.0)
        chat = _client(server)
        try:
            with pytest.raises(GenerationError, match="connection to"):
                await chat.complete(REQUEST)
        finally:
            await chat.aclose()
    finally:
        await server.stop()


async def test_responder_sees_the_request_and_queue_comes_first() -> None:
    seen: list[str] = []

    def responder(body: dict) -> FakeReply:  # type: ignore[type-arg]
        seen.append(body["messages"][-1]["content"])
        return FakeReply(text="from responder")

    async with FakeOpenAIServer(responder=responder) as server:
        server.script(FakeReply(text="from queue"))
        chat = _client(server)
        try:
            assert (await chat.complete(REQUEST)).text == "from queue"
            assert (await chat.complete(REQUEST)).text == "from responder"
        finally:
            await chat.aclose()
    assert seen == ["ping"]
    assert [r.last_user_text for r in server.chat_requests] == ["ping", "ping"]
