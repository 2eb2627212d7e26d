"""Emitting engine events from the turn services: one helper and the sink used when the
application passes none."""

from __future__ import annotations

from typing import Any

from engine.ports import Event, EventSink


class NullSink:
    """An :class:`~engine.ports.EventSink` that drops every event."""

    def emit(self, event: Event) -> None:
        """Drop the event."""


def emit(sink: EventSink, name: str, **payload: Any) -> None:
    """Deliver the event ``name`` with ``payload`` to ``sink``."""
    sink.emit(Event(name=name, payload=payload))
