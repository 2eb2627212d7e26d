"""Protocols the engine needs from the outside world.

Adapters implement these structurally (no base classes): ``adapters.storage`` the unit of work
and repositories, ``adapters.llm`` the chat model, ``bot`` the clock and the event bus. Tests
implement them with fakes. Only engine values cross these seams.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

# --------------------------------------------------------------------------- clock, randomness


class Clock(Protocol):
    """Where the engine gets the time; tests freeze or advance it."""

    def now(self) -> datetime:
        """The current instant, timezone-aware (UTC)."""
        ...


class RandomSource(Protocol):
    """Unseeded randomness (seeded macro randomness is derived inside the macro engine)."""

    def random(self) -> float:
        """A float in [0, 1)."""
        ...


# --------------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Something that happened, e.g. ``floor.committed`` (names after seed 003 section 10)."""

    name: str
    payload: Mapping[str, Any] = field(default_factory=dict)


class EventSink(Protocol):
    """Receives engine events; the in-process bus in ``bot`` fans them out to subscribers."""

    def emit(self, event: Event) -> None:
        """Deliver ``event``; must not raise and must not block."""
        ...


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
    tool calls and usage) is available from ``stream_result`` after the iterator is exhausted.
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


# --------------------------------------------------------------------------- storage
# The unit of work and the repositories (issue 2) live below this line.
