"""The event bus fans out by prefix and survives a failing subscriber."""

from __future__ import annotations

import logging

import pytest

from bot.events import EventBus
from engine.ports import Event


def test_prefix_fan_out_and_unsubscribe(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus()
    floors: list[str] = []
    everything: list[str] = []

    def broken(event: Event) -> None:
        raise RuntimeError("boom")

    bus.subscribe("", broken)
    stop = bus.subscribe("floor.", lambda e: floors.append(e.name))
    bus.subscribe("", lambda e: everything.append(e.name))
    with caplog.at_level(logging.ERROR):
        bus.emit(Event(name="floor.committed", payload={"floor": 1}))
        bus.emit(Event(name="generation.chunk"))
    assert floors == ["floor.committed"]
    assert everything == ["floor.committed", "generation.chunk"]
    assert "event subscriber failed on floor.committed" in caplog.text
    stop()
    bus.emit(Event(name="floor.failed"))
    assert floors == ["floor.committed"]
