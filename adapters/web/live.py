"""Live pages: new floors and pages appear without a reload.

``GET /sessions/{session}/live`` is a server-sent event stream. It says ``changed`` (with the
session's newest activity) whenever the session's newest floor time moves: a floor committed or
failed, a page swiped or chosen. The engine's events (``floor.*``, ``page.*``, through the
process's event bus) wake every stream at once; a stream also looks every
:data:`LIVE_CHECK_S` by itself, so a change made by another process on the same database shows
too. ``static/live.js`` listens on pages that name a stream (``data-live``) and swaps the
page's ``<main>`` for a fresh copy, keeping the scroll position; without JavaScript the page
is an ordinary page that a reload refreshes.

Streams are bounded: at most :data:`MAX_LIVE_STREAMS` at a time, each for at most
:data:`MAX_STREAM_S` (the browser reconnects by itself), and all end when the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any, Final, Protocol

from aiohttp import web

from adapters.web.context import CONTEXT, context_of
from adapters.web.pages_sessions import entry_of
from engine.ports import Event

LIVE_CHECK_S: Final = 2.0
"""How often a stream looks for a change no event announced (another process's turn)."""
MAX_STREAM_S: Final = 15 * 60.0
"""Longest one stream lives; the browser's EventSource then reconnects."""
MAX_LIVE_STREAMS: Final = 200
"""Most streams served at once (more are refused with 503 until one ends)."""
RETRY_MS: Final = 3000
"""How long a browser waits before reconnecting a closed stream."""
LIVE_PREFIXES: Final = ("floor.", "page.")
"""The engine events that may change what a timeline shows."""


class Subscribable(Protocol):
    """An event bus streams can subscribe to (``bot.events.EventBus``)."""

    def subscribe(self, prefix: str, subscriber: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``subscriber`` for events named ``prefix...``; returns the unsubscribe."""
        ...


class LiveHub:
    """Wakes the open streams when the engine emits an event that may change a page."""

    def __init__(self) -> None:
        self._waiters: set[asyncio.Event] = set()
        self._unsubscribe: list[Callable[[], None]] = []
        self.closing = False

    def attach(self, events: object) -> bool:
        """Subscribe to ``events`` when it is a bus (a bare sink cannot be listened to, then
        the streams only look every LIVE_CHECK_S); True when subscribed."""
        subscribe = getattr(events, "subscribe", None)
        if not callable(subscribe):
            return False
        for prefix in LIVE_PREFIXES:
            self._unsubscribe.append(subscribe(prefix, self._on_event))
        return True

    def _on_event(self, _event: Event) -> None:
        for waiter in list(self._waiters):
            waiter.set()

    def register(self) -> asyncio.Event:
        """A wake-up flag for a new stream; 503 when MAX_LIVE_STREAMS are open."""
        if len(self._waiters) >= MAX_LIVE_STREAMS:
            raise web.HTTPServiceUnavailable(text="too many live pages open; try again soon")
        waiter = asyncio.Event()
        self._waiters.add(waiter)
        return waiter

    def release(self, waiter: asyncio.Event) -> None:
        """Forget a stream's flag."""
        self._waiters.discard(waiter)

    @property
    def streams(self) -> int:
        """Streams open now."""
        return len(self._waiters)

    def close(self) -> None:
        """End every stream (the server is stopping) and stop listening."""
        self.closing = True
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()
        self._on_event(Event(name="server.closing"))


HUB_KEY: Final = web.AppKey("tavernbot_live", LiveHub)


def _frame(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, default=str)}\n\n".encode()


async def _activity(request: web.Request, session_id: int) -> datetime | None:
    entry = await context_of(request).directory.session(session_id)
    return None if entry is None else entry.last_activity


async def live_stream(request: web.Request) -> web.StreamResponse:
    """The session's change notices as server-sent events."""
    entry = await entry_of(request)
    hub = request.app[HUB_KEY]
    waiter = hub.register()
    try:
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",  # a reverse proxy must not hold the events back
            }
        )
        await response.prepare(request)
        await response.write(f"retry: {RETRY_MS}\n\n".encode())
        seen = await _activity(request, entry.id)
        await response.write(_frame("hello", {"activity": seen}))
        loop = asyncio.get_running_loop()
        ends = loop.time() + MAX_STREAM_S
        while not hub.closing and loop.time() < ends:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(waiter.wait(), timeout=LIVE_CHECK_S)
            waiter.clear()
            if hub.closing:
                break
            now = await _activity(request, entry.id)
            frame = _frame("changed", {"activity": now}) if now != seen else b": idle\n\n"
            seen = now
            try:
                await response.write(frame)  # an idle comment finds a closed connection too
            except ConnectionResetError:  # the page was closed: the stream just ends
                break
        return response
    finally:
        hub.release(waiter)


async def _close_streams(app: web.Application) -> None:
    app[HUB_KEY].close()


def setup(app: web.Application) -> None:
    """Add the live stream; streams listen to the engine's events when the service's sink
    is a bus, and end when the server shuts down."""
    hub = LiveHub()
    app[HUB_KEY] = hub
    app.router.add_get("/sessions/{session}/live", live_stream, name="live")

    async def attach(app: web.Application) -> None:
        hub.attach(app[CONTEXT].service.events)

    app.on_startup.append(attach)
    app.on_shutdown.append(_close_streams)
