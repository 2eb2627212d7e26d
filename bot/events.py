"""The in-process event bus: the engine emits, adapters and logs subscribe.

Delivery is synchronous and never raises into the emitter: a subscriber that fails is logged
and the others still get the event. Subscribers that need to do slow work must hand it to
their own owned task; the bus never starts tasks itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from engine.ports import Event

log = logging.getLogger(__name__)

Subscriber = Callable[[Event], None]


class EventBus:
    """Fan-out of engine events by name prefix (``"floor."``) or to everything (``""``)."""

    def __init__(self) -> None:
        self._subscribers: list[tuple[str, Subscriber]] = []

    def subscribe(self, prefix: str, subscriber: Subscriber) -> Callable[[], None]:
        """Call ``subscriber`` for events named ``prefix...``; returns an unsubscribe function."""
        entry = (prefix, subscriber)
        self._subscribers.append(entry)

        def unsubscribe() -> None:
            if entry in self._subscribers:
                self._subscribers.remove(entry)

        return unsubscribe

    def emit(self, event: Event) -> None:
        """Deliver ``event`` to every matching subscriber (engine.ports.EventSink)."""
        for prefix, subscriber in list(self._subscribers):
            if event.name.startswith(prefix):
                try:
                    subscriber(event)
                except Exception:  # a broken subscriber must not break a turn
                    log.exception("event subscriber failed on %s", event.name)
