"""The chat model port: the values a model call takes and gives, and the Protocols that
``adapters.llm`` implements (:mod:`engine.ports` re-exports them with the other ports)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

# --------------------------------------------------------------------------- chat model

ChatRole = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One function call the model asked for; ``arguments`` is the raw JSON text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatMessage:
    """One message sent to the model (OpenAI chat-completions shape, as engine data)."""

    role: ChatRole
    content: str
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A tool offered to the model: its name, description and JSON-schema parameters."""

    name: str
    description: str
    parameters: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatRequest:
    """Everything one model call needs; ``sampling`` holds temperature, top_p and the like."""

    model: str
    messages: Sequence[ChatMessage]
    max_tokens: int | None = None
    sampling: Mapping[str, Any] = field(default_factory=dict)
    tools: Sequence[ToolSpec] = ()
    stop: Sequence[str] = ()
    timeout_s: float = 120.0
    # Plain facts about the turn (e.g. "character", "user", "slot") for providers that do not
    # read prompts, such as the offline provider; never sent to a remote model.
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token usage reported by the model (zeros when the provider does not say)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatChunk:
    """A piece of a streamed reply: text so far is the concatenation of ``text`` deltas."""

    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatResult:
    """A finished model reply."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    usage: Usage = field(default_factory=Usage)


class ChatModel(Protocol):
    """An OpenAI-compatible chat model (or the offline provider).

    ``stream`` yields text chunks and returns nothing; the final :class:`ChatResult` (with any
    tool calls and usage) is ``ChatStream.result`` once the iterator is exhausted.
    Failures raise :class:`engine.errors.GenerationError`.
    """

    name: str

    async def complete(self, request: ChatRequest) -> ChatResult:
        """Run the request without streaming."""
        ...

    def stream(self, request: ChatRequest) -> ChatStream:
        """Start a streamed run of the request."""
        ...


class ChatStream(Protocol):
    """An in-flight streamed reply: iterate for chunks, then read ``result``."""

    def __aiter__(self) -> AsyncIterator[ChatChunk]: ...

    @property
    def result(self) -> ChatResult:
        """The complete reply; only valid once iteration has finished."""
        ...

    async def aclose(self) -> None:
        """Cancel the request and release the connection."""
        ...
