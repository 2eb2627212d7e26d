"""Replies through the real openai client against the loopback fake: text, streams, tools."""

from __future__ import annotations

import json

from adapters.llm.openai_model import OpenAIChatModel
from engine.ports import ChatMessage, ChatRequest, ToolCall, ToolSpec, Usage
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeToolCall

DICE = ToolSpec(
    name="roll_dice",
    description="Roll dice",
    parameters={"type": "object", "properties": {"formula": {"type": "string"}}},
)


def _request(text: str, **kwargs: object) -> ChatRequest:
    messages = [
        ChatMessage(role="system", content="You are Seraphina."),
        ChatMessage(role="user", content=text),
    ]
    return ChatRequest(model="", messages=messages, **kwargs)  # type: ignore[arg-type]


async def test_complete_returns_text_and_sends_the_prompt(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(FakeReply(text="Hello, traveller.", usage=(11, 3)))
    request = _request(
        "hi there", max_tokens=64, stop=["\nUser:"], sampling={"temperature": 0.7, "top_k": 40}
    )

    result = await model.complete(request)

    assert result.text == "Hello, traveller."
    assert result.finish_reason == "stop"
    assert result.usage == Usage(prompt_tokens=11, completion_tokens=3)
    [sent] = server.chat_requests
    assert sent.body["model"] == "fake-model"
    assert sent.body["messages"] == [
        {"role": "system", "content": "You are Seraphina."},
        {"role": "user", "content": "hi there"},
    ]
    assert sent.body["max_tokens"] == 64
    assert sent.body["stop"] == ["\nUser:"]
    assert sent.body["temperature"] == 0.7
    assert sent.body["top_k"] == 40
    assert not sent.body.get("stream")


async def test_request_model_wins_over_the_default(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    request = ChatRequest(model="other-model", messages=[ChatMessage(role="user", content="x")])
    await model.complete(request)
    assert server.chat_requests[0].body["model"] == "other-model"


async def test_sampling_cannot_override_request_fields(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    await model.complete(_request("x", sampling={"model": "evil", "stream": True}))
    body = server.chat_requests[0].body
    assert body["model"] == "fake-model"
    assert not body.get("stream")


async def test_stream_yields_chunks_then_result_with_usage(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    text = "The lantern flickers as the wind rises over the hill."
    server.script(FakeReply(text=text, chunk_chars=5, usage=(20, 10)))

    stream = model.stream(_request("tell me"))
    chunks = [chunk.text async for chunk in stream]

    assert len(chunks) > 3
    assert "".join(chunks) == text
    assert stream.result.text == text
    assert stream.result.usage == Usage(prompt_tokens=20, completion_tokens=10)
    body = server.chat_requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_stream_without_usage_reports_zeros(server: FakeOpenAIServer) -> None:
    chat = OpenAIChatModel(base_url=server.base_url, model="fake-model", stream_usage=False)
    try:
        stream = chat.stream(_request("hello"))
        text = "".join([c.text async for c in stream])
    finally:
        await chat.aclose()
    assert text == "echo: hello"
    assert stream.result.usage == Usage()
    assert "stream_options" not in server.chat_requests[0].body


async def test_streamed_tool_calls_are_assembled_from_deltas(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(
        FakeReply(
            text="Let me roll.",
            tool_calls=[
                FakeToolCall(id="call_a", name="roll_dice", arguments='{"formula": "2d6+1"}'),
                FakeToolCall(id="call_b", name="current_time", arguments="{}"),
            ],
        )
    )

    stream = model.stream(_request("roll", tools=[DICE]))
    text = "".join([chunk.text async for chunk in stream])

    assert text == "Let me roll."
    assert stream.result.finish_reason == "tool_calls"
    assert stream.result.tool_calls == (
        ToolCall(id="call_a", name="roll_dice", arguments='{"formula": "2d6+1"}'),
        ToolCall(id="call_b", name="current_time", arguments="{}"),
    )
    assert json.loads(stream.result.tool_calls[0].arguments) == {"formula": "2d6+1"}
    assert server.chat_requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "roll_dice",
                "description": "Roll dice",
                "parameters": {"type": "object", "properties": {"formula": {"type": "string"}}},
            },
        }
    ]


async def test_non_streamed_tool_calls(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    server.script(
        FakeReply(
            tool_calls=[FakeToolCall(id="c1", name="roll_dice", arguments='{"formula":"d20"}')]
        )
    )
    result = await model.complete(_request("roll", tools=[DICE]))
    assert result.text == ""
    assert result.finish_reason == "tool_calls"
    assert result.tool_calls == (
        ToolCall(id="c1", name="roll_dice", arguments='{"formula":"d20"}'),
    )


async def test_tool_round_trip_messages_are_sent_in_openai_shape(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    call = ToolCall(id="c1", name="roll_dice", arguments='{"formula":"d20"}')
    messages = [
        ChatMessage(role="user", content="roll"),
        ChatMessage(role="assistant", content="", tool_calls=(call,)),
        ChatMessage(role="tool", content="17", tool_call_id="c1"),
    ]
    await model.complete(ChatRequest(model="", messages=messages, tools=[DICE]))
    sent = server.chat_requests[0].body["messages"]
    assert sent[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "roll_dice", "arguments": '{"formula":"d20"}'},
            }
        ],
    }
    assert sent[2] == {"role": "tool", "content": "17", "tool_call_id": "c1"}


async def test_slow_stream_within_the_timeout_completes(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    server.script(
        FakeReply(text="slow but steady", chunk_chars=4, latency_s=0.1, chunk_delay_s=0.05)
    )
    stream = model.stream(_request("go", timeout_s=5.0))
    assert "".join([c.text async for c in stream]) == "slow but steady"


async def test_list_models(server: FakeOpenAIServer, model: OpenAIChatModel) -> None:
    assert await model.list_models() == ["fake-model"]


async def test_metadata_is_never_sent_to_the_server(
    server: FakeOpenAIServer, model: OpenAIChatModel
) -> None:
    request = ChatRequest(
        model="",
        messages=[ChatMessage(role="user", content="hi")],
        metadata={"character": "Seraphina", "user": "Ava", "slot": "narrator"},
    )
    await model.complete(request)
    stream = model.stream(request)
    async for _chunk in stream:
        pass
    for recorded in server.chat_requests:
        assert "metadata" not in recorded.body
        assert "Seraphina" not in str(recorded.body)
