"""The embeddings adapter through the real openai client against the loopback fake server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from adapters.llm.embeddings import OpenAIEmbedder
from adapters.llm.retry import RetryPolicy
from engine.errors import GenerationError
from tests.fakes.fake_embeddings import FAKE_EMBEDDING_DIMS, fake_embedding
from tests.fakes.openai_server import FakeError, FakeHang, FakeOpenAIServer
from tests.test_llm.conftest import API_KEY, RecordingSleep


@pytest.fixture
async def embedder(
    server: FakeOpenAIServer, sleep: RecordingSleep
) -> AsyncIterator[OpenAIEmbedder]:
    client = OpenAIEmbedder(
        base_url=server.base_url,
        model="fake-embed",
        api_key=API_KEY,
        timeout_s=5.0,
        retry=RetryPolicy(max_retries=2),
        sleep=sleep,
        jitter=lambda: 0.0,
    )
    yield client
    await client.aclose()


async def test_vectors_come_back_in_order_from_the_endpoint(
    server: FakeOpenAIServer, embedder: OpenAIEmbedder
) -> None:
    texts = ["Maya's automobile is crimson", "What colour is her car?", "chess on Sundays"]
    vectors = await embedder.embed(texts)
    assert len(vectors) == 3 and all(len(v) == FAKE_EMBEDDING_DIMS for v in vectors)
    for text, vector in zip(texts, vectors, strict=True):
        assert vector == pytest.approx(fake_embedding(text), abs=1e-6)
    (body,) = server.embedding_requests
    assert body["model"] == "fake-embed" and body["input"] == texts
    assert server.requests == []  # embeddings are kept apart from the chat requests
    assert await embedder.embed([]) == [] and len(server.embedding_requests) == 1
    assert embedder.model == "fake-embed"


async def test_503_and_429_are_retried_as_the_chat_model_does(
    server: FakeOpenAIServer, embedder: OpenAIEmbedder, sleep: RecordingSleep
) -> None:
    server.embedding_script.extend([FakeError(status=503), FakeError(status=429, retry_after="2")])
    vectors = await embedder.embed(["hello"])
    assert len(vectors) == 1 and len(server.embedding_requests) == 3
    assert sleep.waits == [0.5, 2.0]


async def test_errors_are_one_line_and_never_show_the_key(
    server: FakeOpenAIServer, embedder: OpenAIEmbedder
) -> None:
    server.embedding_script.append(FakeError(status=400, message=f"bad model, key {API_KEY}"))
    with pytest.raises(GenerationError) as caught:
        await embedder.embed(["hello"])
    message = str(caught.value)
    assert message.startswith("embeddings server 127.0.0.1:") and "answered 400" in message
    assert API_KEY not in message and "\n" not in message and not caught.value.retryable
    server.embedding_script.extend([FakeError(status=500)] * 3)
    with pytest.raises(GenerationError) as exhausted:
        await embedder.embed(["hello"])
    assert exhausted.value.retryable and "500" in str(exhausted.value)


async def test_a_hanging_endpoint_times_out(server: FakeOpenAIServer) -> None:
    client = OpenAIEmbedder(
        base_url=server.base_url, model="m", timeout_s=0.2, retry=RetryPolicy(max_retries=0)
    )
    server.embedding_script.append(FakeHang())
    try:
        with pytest.raises(GenerationError, match="did not answer within 0.2s"):
            await client.embed(["x"])
    finally:
        await client.aclose()
