"""Conversions between engine chat values and the OpenAI chat-completions wire shape.

Only engine values leave this module: requests go out as plain dicts, answers come back as
:class:`~engine.ports.ChatResult`; no ``openai`` object crosses into the engine.

Answers are read through the ``openai`` package's own models (:class:`ChatCompletion`,
:class:`ChatCompletionChunk`). The client builds them without validation, so a field that a
lenient server leaves out reads as ``None`` even where the model declares it required: every
field is read as possibly missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openai.types import CompletionUsage
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionMessageFunctionToolCall,
)
from openai.types.chat.chat_completion_chunk import ChoiceDeltaToolCall

from engine.ports import ChatMessage, ChatRequest, ChatResult, ToolCall, Usage
from engine.redaction import redact_text

RESERVED_BODY_KEYS = frozenset(
    {"model", "messages", "stream", "stream_options", "tools", "stop", "max_tokens"}
)
"""Request fields set from :class:`ChatRequest` itself; a sampling entry cannot override them."""


def message_to_wire(message: ChatMessage) -> dict[str, Any]:
    """One engine message as an OpenAI chat message dict."""
    wire: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.name:
        wire["name"] = message.name
    if message.tool_calls:
        # An assistant turn that only calls tools carries no text.
        wire["content"] = message.content or None
        wire["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    if message.tool_call_id is not None:
        wire["tool_call_id"] = message.tool_call_id
    return wire


def request_to_wire(request: ChatRequest, *, default_model: str) -> dict[str, Any]:
    """The arguments of ``chat.completions.create`` for ``request`` (without ``stream``).

    Sampling values go into ``extra_body`` unchanged, so server-specific knobs (``top_k``,
    ``min_p``, ``repetition_penalty``) reach servers that understand them.
    """
    kwargs: dict[str, Any] = {
        "model": request.model or default_model,
        "messages": [message_to_wire(m) for m in request.messages],
    }
    if request.max_tokens is not None:
        kwargs["max_tokens"] = request.max_tokens
    if request.stop:
        kwargs["stop"] = list(request.stop)
    if request.tools:
        kwargs["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": dict(tool.parameters),
                },
            }
            for tool in request.tools
        ]
    extra = {k: v for k, v in request.sampling.items() if k not in RESERVED_BODY_KEYS}
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def usage_from_wire(usage: CompletionUsage | None) -> Usage:
    """Token usage from an ``openai`` usage object (zeros when it or a count is missing)."""
    if usage is None:
        return Usage()
    return Usage(
        prompt_tokens=usage.prompt_tokens or 0,
        completion_tokens=usage.completion_tokens or 0,
    )


def result_from_completion(completion: ChatCompletion) -> ChatResult:
    """A finished, non-streamed ``ChatCompletion`` as an engine result."""
    usage = usage_from_wire(completion.usage)
    choices = completion.choices or []
    if not choices:
        return ChatResult(text="", finish_reason="empty", usage=usage)
    message = choices[0].message
    if message is None:  # no text at all, e.g. a content filter's answer
        return ChatResult(text="", finish_reason=choices[0].finish_reason or "empty", usage=usage)
    calls = tuple(
        ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments or "")
        for call in message.tool_calls or []
        # Custom (free-text) tools are never offered, so only function calls are read.
        if isinstance(call, ChatCompletionMessageFunctionToolCall) and call.function is not None
    )
    return ChatResult(
        text=message.content or "",
        tool_calls=calls,
        finish_reason=choices[0].finish_reason or ("tool_calls" if calls else "stop"),
        usage=usage,
    )


@dataclass(slots=True)
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class StreamAssembler:
    """Builds the final :class:`ChatResult` from streamed chunks.

    Tool calls arrive as deltas keyed by ``index``: the first carries the id and name, later
    ones pieces of the JSON arguments. Servers that omit ``index`` send whole calls, which are
    numbered in arrival order.
    """

    _text: list[str] = field(default_factory=list)
    _calls: dict[int, _PartialCall] = field(default_factory=dict)
    _finish: str | None = None
    _usage: Usage = field(default_factory=Usage)

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Take one streamed chunk; returns its new visible text ("" if none)."""
        if chunk.usage is not None:
            self._usage = usage_from_wire(chunk.usage)
        new_text = ""
        for choice in chunk.choices or []:
            if choice.index not in (0, None):
                continue  # only the first choice is used; n > 1 is never requested
            delta = choice.delta
            if delta is not None:
                if delta.content:
                    new_text += delta.content
                for call in delta.tool_calls or []:
                    self._add_call(call)
            if choice.finish_reason:
                self._finish = choice.finish_reason
        if new_text:
            self._text.append(new_text)
        return new_text

    def _add_call(self, call: ChoiceDeltaToolCall) -> None:
        index = call.index if call.index is not None else len(self._calls)
        partial = self._calls.setdefault(index, _PartialCall())
        if call.id:
            partial.id = call.id
        function = call.function
        if function is not None:
            if function.name:
                partial.name = function.name
            if function.arguments:
                partial.arguments.append(function.arguments)

    def result(self) -> ChatResult:
        """The assembled reply."""
        calls = tuple(
            ToolCall(id=p.id or f"call_{i}", name=p.name, arguments="".join(p.arguments))
            for i, p in sorted(self._calls.items())
        )
        return ChatResult(
            text="".join(self._text),
            tool_calls=calls,
            finish_reason=self._finish or ("tool_calls" if calls else "stop"),
            usage=self._usage,
        )


def scrub(text: str, secrets: Mapping[str, str]) -> str:
    """Replace every secret value in ``text`` by its label (so a key never reaches a message),
    then hide the credentials of any URL left in it (:func:`engine.redaction.redact_text`)."""
    for value, label in secrets.items():
        if value:
            text = text.replace(value, label)
    return redact_text(text)
