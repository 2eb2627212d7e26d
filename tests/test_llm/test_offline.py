"""The offline provider: deterministic, local, announced, and JSON for the memory slot."""

from __future__ import annotations

import json
import logging
import socket

import pytest

from adapters.llm import OFFLINE_ANNOUNCEMENT, OfflineChatModel, build_chat_model
from adapters.llm.offline import MAX_QUOTE_CHARS, OFFLINE_CHUNKS, offline_reply
from engine.errors import GenerationError
from engine.ports import ChatMessage, ChatRequest


def _request(
    text: str, system: str = "Seraphina is a forest guardian.", **meta: str
) -> ChatRequest:
    messages = [
        ChatMessage(role="system", content=system),
        ChatMessage(role="user", content="earlier message"),
        ChatMessage(role="assistant", content="earlier reply"),
        ChatMessage(role="user", content=text),
    ]
    return ChatRequest(model="offline", messages=messages, metadata=meta)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the offline provider opened a socket")

    # Connecting is what a network call needs; the event loop's own socketpair stays usable.
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


async def test_same_request_same_reply(no_network: None) -> None:
    model = OfflineChatModel(announce=False)
    request = _request("Where are we?", character="Seraphina", user="Ava")
    first = await model.complete(request)
    second = await OfflineChatModel(announce=False).complete(request)
    assert first == second
    assert "Seraphina" in first.text
    assert "Ava" in first.text
    assert "Where are we?" in first.text


async def test_reply_depends_on_character_and_input(no_network: None) -> None:
    model = OfflineChatModel(announce=False)
    base = await model.complete(_request("Hello", character="Seraphina", user="Ava"))
    other_input = await model.complete(_request("Goodbye", character="Seraphina", user="Ava"))
    other_character = await model.complete(_request("Hello", character="Lilith", user="Ava"))
    assert len({base.text, other_input.text, other_character.text}) == 3


async def test_without_metadata_uses_the_messages(no_network: None) -> None:
    result = await OfflineChatModel(announce=False).complete(_request("What now?"))
    assert "Seraphina is a forest guardian." in result.text
    assert "What now?" in result.text
    assert "earlier message" not in result.text


async def test_long_input_is_quoted_up_to_the_limit(no_network: None) -> None:
    result = await OfflineChatModel(announce=False).complete(
        _request("word " * 500, character="C")
    )
    assert "word " * 10 in result.text
    assert len(result.text) < MAX_QUOTE_CHARS + 200


async def test_stream_matches_complete_in_a_few_chunks(no_network: None) -> None:
    model = OfflineChatModel(announce=False)
    request = _request("Tell me a story", character="Seraphina", user="Ava")
    stream = model.stream(request)
    chunks = [c.text async for c in stream]
    assert 1 < len(chunks) <= OFFLINE_CHUNKS
    assert "".join(chunks) == (await model.complete(request)).text
    assert stream.result.text == "".join(chunks)
    assert stream.result.usage.completion_tokens == len(stream.result.text.split())


async def test_result_before_the_end_is_an_error() -> None:
    stream = OfflineChatModel(announce=False).stream(_request("x"))
    with pytest.raises(GenerationError):
        _ = stream.result
    iterator = aiter(stream)
    await anext(iterator)
    await stream.aclose()
    with pytest.raises(GenerationError):
        _ = stream.result


async def test_memory_slot_returns_memory_ops_json(no_network: None) -> None:
    request = _request("I found the key", character="Seraphina", user="Ava", slot="memory")
    result = await OfflineChatModel(announce=False).complete(request)
    ops = json.loads(result.text)
    assert set(ops) == {"turn_summary", "facts_add", "facts_update", "facts_deprecate"}
    assert "I found the key" in ops["turn_summary"]
    assert ops["facts_add"] == []
    assert offline_reply(request) == result.text


async def test_director_and_verifier_slots(no_network: None) -> None:
    model = OfflineChatModel(announce=False)
    director = await model.complete(_request("hi", character="Seraphina", slot="director"))
    verifier = await model.complete(_request("hi", character="Seraphina", slot="verifier"))
    assert "Seraphina" in director.text
    assert json.loads(verifier.text) == {"verdict": "pass", "notes": ""}


def test_announces_itself_as_offline(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # at DEBUG: the front ends say it to their users
    build_chat_model("offline", None, None, "any")
    assert OFFLINE_ANNOUNCEMENT in caplog.text


def test_negative_delay_is_refused() -> None:
    with pytest.raises(ValueError, match="chunk_delay_s"):
        OfflineChatModel(chunk_delay_s=-1.0)


async def test_delay_still_gives_the_same_text(no_network: None) -> None:
    request = _request("slowly", character="C")
    stream = OfflineChatModel(chunk_delay_s=0.01, announce=False).stream(request)
    assert "".join([c.text async for c in stream]) == offline_reply(request)


async def test_a_regenerated_page_gets_a_different_deterministic_reply() -> None:
    from adapters.llm.offline import offline_reply
    from engine.ports import ChatMessage, ChatRequest

    def request(attempt: str) -> ChatRequest:
        return ChatRequest(
            model="offline",
            messages=[ChatMessage(role="user", content="Hello there")],
            metadata={"character": "Aqua", "user": "Kazuma", "attempt": attempt},
        )

    first, second = offline_reply(request("1")), offline_reply(request("2"))
    assert first != second and second.endswith("(take 2)")
    assert offline_reply(request("2")) == second
