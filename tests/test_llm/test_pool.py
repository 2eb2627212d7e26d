"""The model pool: reuse, bound, keys from profiles, and many streams at once."""

from __future__ import annotations

import asyncio

import pytest

from adapters.llm import OfflineChatModel
from adapters.llm.openai_model import OpenAIChatModel
from adapters.llm.pool import MAX_POOLED_MODELS, ChatModelPool
from engine.ports import ChatMessage, ChatRequest
from engine.turns.profiles import LLMProfile, environment_profile
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply

URL = "http://127.0.0.1:9/v1"


class ReversingCipher:
    def encrypt(self, plaintext: str) -> str:
        return "rev:" + plaintext[::-1]

    def decrypt(self, ciphertext: str) -> str:
        return ciphertext.removeprefix("rev:")[::-1]


async def test_same_settings_same_model_different_settings_different_model() -> None:
    pool = ChatModelPool()
    try:
        a = pool.get("openai", URL, "k1", "m")
        assert pool.get("openai", URL, "k1", "m") is a
        assert pool.get("openai", URL, "k2", "m") is not a
        assert pool.get("openai", URL, "k1", "m2") is not a
        offline = pool.get("offline", None, None, "x")
        assert isinstance(offline, OfflineChatModel)
        assert pool.get("openai", None, None, "y") is offline
        assert len(pool) == 4
    finally:
        await pool.aclose()
    assert isinstance(a, OpenAIChatModel)
    assert a._client.is_closed()


async def test_pool_is_bounded_and_closes_retired_models() -> None:
    pool = ChatModelPool(max_models=2)
    first = pool.get("openai", URL, None, "m1")
    pool.get("openai", URL, None, "m2")
    pool.get("openai", URL, None, "m3")
    assert len(pool) == 2
    assert pool.get("openai", URL, None, "m1") is not first  # evicted, rebuilt
    await pool.aclose()
    assert isinstance(first, OpenAIChatModel)
    assert first._client.is_closed()
    assert len(pool) == 0
    assert MAX_POOLED_MODELS >= 2
    with pytest.raises(ValueError, match="max_models"):
        ChatModelPool(max_models=0)


async def test_profile_key_is_decrypted_for_the_call() -> None:
    cipher = ReversingCipher()
    async with FakeOpenAIServer() as server:
        profile = LLMProfile(id="p", model="fake-model", base_url=server.base_url).with_api_key(
            "sk-from-profile", cipher
        )
        env = environment_profile(provider="openai", base_url=server.base_url, model="fake-model")
        pool = ChatModelPool()
        try:
            request = ChatRequest(model="", messages=[ChatMessage(role="user", content="hi")])
            await pool.for_profile(profile, cipher, {}).complete(request)
            await pool.for_profile(env, cipher, {"LLM_API_KEY": "sk-from-env"}).complete(request)
        finally:
            await pool.aclose()
        auth = [r.headers["Authorization"] for r in server.chat_requests]
        assert auth == ["Bearer sk-from-profile", "Bearer sk-from-env"]


async def test_many_concurrent_streams_each_get_their_own_reply() -> None:
    count = 60
    async with FakeOpenAIServer(
        responder=lambda body: FakeReply(
            text=f"reply to {body['messages'][-1]['content']}", chunk_chars=3, latency_s=0.05
        ),
        max_requests=count,
    ) as server:
        pool = ChatModelPool()
        model = pool.get("openai", server.base_url, None, "fake-model")

        async def one(n: int) -> str:
            request = ChatRequest(model="", messages=[ChatMessage(role="user", content=f"#{n}")])
            stream = model.stream(request)
            text = "".join([chunk.text async for chunk in stream])
            assert stream.result.text == text
            return text

        try:
            replies = await asyncio.gather(*(one(n) for n in range(count)))
        finally:
            await pool.aclose()
    assert replies == [f"reply to #{n}" for n in range(count)]
    assert sorted(r.last_user_text for r in server.chat_requests) == sorted(
        f"#{n}" for n in range(count)
    )
    assert server.overflow == 0
