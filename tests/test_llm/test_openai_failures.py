"""Retries, timeouts, cancellation and errors through the real openai client."""

from __future__ import annotations

import asyncio
import logging

import pytest

from adapters.llm.openai_model import OpenAIChatModel
from adapters.llm.retry import RETRY_AFTER_CAP_S, RetryPolicy
from engine.errors import GenerationError
from engine.ports import ChatMessage, ChatRequest
from tests.fakes.openai_server import FakeError, FakeHang, FakeOpenAIServer, FakeReply
from tests.test_llm.conftest import API_KEY, RecordingSleep


def _request(text: str = "hello", timeout_s: float = 10.0) -> ChatRequest:
    return ChatRequest(
        model="", messages=[ChatMessage(role="user", content=text)], timeout_s=timeout_s
    )


async def test_429_with_retry_after_is_retried_after_the_asked_wait(
    server: FakeOpenAIServer, model: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.script(
        FakeError(status=429, message="slow down", retry_after="2"), FakeReply(text="ok")
    )

    result = await model.complete(_request())

    assert result.text == "ok"
    assert len(server.chat_requests) == 2
    assert sleep.waits == [2.0]
    assert server.chat_requests[1].headers["Authorization"] == f"Bearer {API_KEY}"


async def test_429_on_a_stream_is_retried_before_any_text(
    server: FakeOpenAIServer, model: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.script(FakeError(status=429, retry_after="1.5"), FakeReply(text="streamed ok"))
    stream = model.stream(_request())
    assert "".join([c.text async for c in stream]) == "streamed ok"
    assert sleep.waits == [1.5]
    assert len(server.chat_requests) == 2


async def test_retry_after_over_the_cap_fails_at_once(
    server: FakeOpenAIServer, model: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.script(FakeError(status=429, retry_after=str(int(RETRY_AFTER_CAP_S) + 1)))
    with pytest.raises(GenerationError, match="429") as caught:
        await model.complete(_request())
    assert caught.value.retryable
    assert "limit" in str(caught.value)
    assert sleep.waits == []
    assert len(server.chat_requests) == 1


async def test_500_is_retried_with_backoff(
    server: FakeOpenAIServer, model: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.script(FakeError(status=500), FakeError(status=503), FakeReply(text="recovered"))
    result = await model.complete(_request())
    assert result.text == "recovered"
    assert len(server.chat_requests) == 3
    policy = RetryPolicy()
    assert sleep.waits == [policy.backoff_base_s, policy.backoff_base_s * 2]


async def test_retries_stop_at_max_retries(
    server: FakeOpenAIServer, model: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.script(*[FakeError(status=502, message="bad gateway")] * 5, FakeReply(text="late"))
    with pytest.raises(GenerationError, match="502") as caught:
        await model.complete(_request())
    assert caught.value.retryable
    assert isinstance(caught.value.__cause__, Exception)
    assert len(server.chat_requests) == model.retry.max_retries + 1
    assert len(sleep.waits) == model.retry.max_retries


async def test_client_errors_are_not_retried(
    server: FakeOpenAIServer, model: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.script(FakeError(status=400, message="bad request: messages missing"))
    with pytest.raises(GenerationError, match="messages missing") as caught:
        await model.complete(_request())
    assert not caught.value.retryable
    assert len(server.chat_requests) == 1
    assert sleep.waits == []


async def test_500_mid_stream_raises_generation_error_without_retry(
    server: FakeOpenAIServer, model: OpenAIChatModel, sleep: RecordingSleep
) -> None:
    server.script(
        FakeReply(text="Once upon a time there was", chunk_chars=5, error_after_chunks=2)
    )
    stream = model.stream(_request())
    received: list[str] = []
    with pytest.raises(GenerationError, match="mid-stream"):
        async for chunk in stream:
            received.append(chunk.text)
    assert "".join(received) == "Once upon "
    assert len(server.chat_requests) == 1
    assert sleep.waits == []
    with pytest.raises(GenerationError):
        _ = stream.result


async def test_dropped_connection_mid_stream_raises_generation_error(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(FakeReply(text="abcdefghijklmnop", chunk_chars=4, drop_after_chunks=1))
    stream = model.stream(_request())
    with pytest.raises(GenerationError, match="while streaming"):
        async for _chunk in stream:
            pass


async def test_hung_response_times_out(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    server.script(FakeHang())
    with pytest.raises(GenerationError, match="did not answer within") as caught:
        await model.complete(_request(timeout_s=0.3))
    assert caught.value.retryable
    recorded = await server.wait_done(0)
    assert recorded.disconnected
    assert not recorded.finished
    assert len(server.chat_requests) == 1  # a timeout is not retried


async def test_hung_stream_times_out(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    server.script(FakeHang())
    stream = model.stream(_request(timeout_s=0.3))
    with pytest.raises(GenerationError, match="did not answer within"):
        async for _chunk in stream:
            pass
    assert (await server.wait_done(0)).disconnected


async def test_stalled_stream_times_out_between_chunks(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(FakeReply(text="a" * 40, chunk_chars=4, chunk_delay_s=3.0))
    stream = model.stream(_request(timeout_s=0.3))
    with pytest.raises(GenerationError, match="while streaming"):
        async for _chunk in stream:
            pass


async def test_model_timeout_caps_the_request_timeout(server: FakeOpenAIServer) -> None:
    server.script(FakeHang())
    chat = OpenAIChatModel(base_url=server.base_url, model="fake-model", timeout_s=0.3)
    try:
        with pytest.raises(GenerationError, match="within 0.3s"):
            await chat.complete(_request(timeout_s=60.0))
    finally:
        await chat.aclose()


async def test_closing_a_stream_aborts_the_http_request(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(FakeReply(text="x" * 400, chunk_chars=4, chunk_delay_s=0.05))
    stream = model.stream(_request())
    iterator = aiter(stream)
    first = await anext(iterator)
    assert first.text

    await stream.aclose()

    recorded = await server.wait_done(0)
    assert recorded.disconnected
    assert not recorded.finished
    with pytest.raises(GenerationError):
        _ = stream.result


async def test_cancelling_the_consumer_aborts_the_http_request(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(FakeReply(text="y" * 400, chunk_chars=4, chunk_delay_s=0.05))
    stream = model.stream(_request())
    started = asyncio.Event()

    async def consume() -> None:
        async for _chunk in stream:
            started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 5.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert (await server.wait_done(0)).disconnected


async def test_connection_refused_is_retried_then_reported(sleep: RecordingSleep) -> None:
    async with FakeOpenAIServer() as gone:
        url = gone.base_url
    chat = OpenAIChatModel(
        base_url=url, model="m", retry=RetryPolicy(max_retries=2), sleep=sleep, jitter=lambda: 0.0
    )
    try:
        with pytest.raises(GenerationError, match="connection to") as caught:
            await chat.complete(_request())
    finally:
        await chat.aclose()
    assert caught.value.retryable
    assert len(sleep.waits) == 2


async def test_api_key_never_logged_nor_shown(
    server: FakeOpenAIServer, model: OpenAIChatModel, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.script(
        FakeError(status=500, message="oops"),
        FakeError(status=401, message=f"Incorrect API key provided: {API_KEY}"),
    )
    with pytest.raises(GenerationError) as caught:
        await model.complete(_request())
    assert "401" in str(caught.value)
    assert API_KEY not in str(caught.value)
    assert "***" in str(caught.value)
    assert any("retrying" in r.getMessage() for r in caplog.records)
    assert API_KEY not in caplog.text
    assert API_KEY not in repr(model)


async def test_closing_from_another_task_ends_the_consumer_with_generation_error(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(FakeReply(text="z" * 400, chunk_chars=4, chunk_delay_s=0.05))
    stream = model.stream(_request())
    started = asyncio.Event()

    async def consume() -> None:
        async for _chunk in stream:
            started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 5.0)
    await stream.aclose()
    with pytest.raises(GenerationError, match="closed"):
        await asyncio.wait_for(task, 5.0)
    assert (await server.wait_done(0)).disconnected


async def test_closing_while_the_request_opens_sends_nothing_further(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(FakeReply(text="late reply", latency_s=0.3))
    stream = model.stream(_request())
    chunks: list[str] = []

    async def consume() -> None:
        async for chunk in stream:
            chunks.append(chunk.text)

    task = asyncio.create_task(consume())
    await server.wait_requests(1)
    await stream.aclose()
    with pytest.raises(GenerationError, match="closed"):
        await asyncio.wait_for(task, 5.0)
    assert chunks == []


async def test_closing_before_iterating_sends_no_request(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    stream = model.stream(_request())
    await stream.aclose()
    with pytest.raises(GenerationError, match="closed"):
        async for _chunk in stream:
            pass
    assert server.chat_requests == []
