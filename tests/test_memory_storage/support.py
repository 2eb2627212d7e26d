"""Fakes for the memory service tests: a clock, a scripted memory model, an event log."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from engine.errors import GenerationError
from engine.memory.ports import MemoryRepository
from engine.memory.records import SequentialIds
from engine.memory.service import MemoryService, MemorySettings
from engine.ports import ChatRequest, ChatResult, Event
from tests.test_memory.helpers import T0, count_tokens


@dataclass
class FakeClock:
    """An :class:`engine.ports.Clock` the test moves by hand."""

    current: datetime = T0

    def now(self) -> datetime:
        return self.current

    def advance(self, **kw: float) -> None:
        self.current += timedelta(**kw)


@dataclass
class ScriptedModel:
    """A memory-slot model answering from a list; an exception in the list is raised."""

    answers: list[str | Exception] = field(default_factory=list)
    requests: list[ChatRequest] = field(default_factory=list)
    name: str = "scripted"

    async def complete(self, request: ChatRequest) -> ChatResult:
        self.requests.append(request)
        answer = self.answers.pop(0) if self.answers else "{}"
        if isinstance(answer, Exception):
            raise answer
        return ChatResult(text=answer)

    def stream(self, request: ChatRequest):  # pragma: no cover - the memory slot never streams
        raise GenerationError("not streamed")


@dataclass
class EventLog:
    """An :class:`engine.ports.EventSink` that keeps everything."""

    events: list[Event] = field(default_factory=list)

    def emit(self, event: Event) -> None:
        self.events.append(event)

    def names(self) -> list[str]:
        return [e.name for e in self.events]

    def named(self, name: str) -> list[Event]:
        return [e for e in self.events if e.name == name]


def make_service(
    repo: MemoryRepository,
    *,
    answers: Sequence[str | Exception] = (),
    clock: FakeClock | None = None,
    settings: MemorySettings | None = None,
    model: object | None = None,
    summariser: Callable | None = None,
) -> tuple[MemoryService, ScriptedModel, EventLog, FakeClock]:
    """A service over ``repo`` with deterministic ids."""
    scripted = ScriptedModel(answers=list(answers))
    events, clock = EventLog(), clock or FakeClock()
    service = MemoryService(
        repo,
        count=count_tokens,
        clock=clock,
        model=model if model is not None else scripted,  # type: ignore[arg-type]
        model_name="memory-model",
        events=events,
        settings=settings,
        summariser=summariser,
        new_id=SequentialIds("m"),
    )
    return service, scripted, events, clock
