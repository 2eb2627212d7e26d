"""Reading answers from lenient servers: the client builds openai's models without validation,
so any field may be missing; the conversion reads each as possibly absent."""

from __future__ import annotations

from openai.types.chat import ChatCompletion, ChatCompletionChunk

from adapters.llm.convert import StreamAssembler, result_from_completion
from engine.ports import ToolCall, Usage


def test_a_choice_without_a_message_keeps_its_finish_reason() -> None:
    completion = ChatCompletion.construct(
        id="c", choices=[{"index": 0, "message": None, "finish_reason": "content_filter"}]
    )
    result = result_from_completion(completion)
    assert (result.text, result.finish_reason, result.tool_calls) == ("", "content_filter", ())


def test_a_completion_without_choices_or_usage_is_empty() -> None:
    result = result_from_completion(ChatCompletion.construct(id="c"))
    assert (result.text, result.finish_reason, result.usage) == ("", "empty", Usage())


def test_a_completion_missing_finish_reason_and_counts_reads_as_defaults() -> None:
    completion = ChatCompletion.construct(
        id="c",
        choices=[
            {
                "message": {
                    "content": None,
                    "tool_calls": [{"id": "t1", "function": {"name": "roll", "arguments": None}}],
                }
            }
        ],
        usage={"prompt_tokens": 7},
    )
    result = result_from_completion(completion)
    assert result.tool_calls == (ToolCall(id="t1", name="roll", arguments=""),)
    assert (result.text, result.finish_reason) == ("", "tool_calls")
    assert result.usage == Usage(prompt_tokens=7, completion_tokens=0)


def test_stream_chunks_without_index_or_usage_are_assembled_in_order() -> None:
    assembler = StreamAssembler()
    chunks = [
        {"choices": [{"delta": {"content": "Hel"}}]},
        {
            "choices": [
                {
                    "delta": {
                        "content": "lo",
                        "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}],
                    }
                }
            ]
        },
        {"choices": [{"index": 1, "delta": {"content": "other choice"}}]},
        {"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": None},
    ]
    texts = [assembler.add(ChatCompletionChunk.construct(id="k", **chunk)) for chunk in chunks]
    assert texts == ["Hel", "lo", "", ""]
    result = assembler.result()
    assert (result.text, result.finish_reason, result.usage) == ("Hello", "stop", Usage())
    assert result.tool_calls == (ToolCall(id="a", name="f", arguments="{}"),)
