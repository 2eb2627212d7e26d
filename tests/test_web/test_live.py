"""Live pages: the server-sent event stream of a session says ``changed`` when a reply is made
(through the console, in the same process, announced by the engine's events); the hub that
wakes the streams subscribes to the event bus, is bounded, and ends every stream on shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web

from adapters.web import live
from adapters.web.live import LIVE_PREFIXES, LiveHub
from bot.events import EventBus
from engine.ports import Event
from tests.test_web.played import PlayedServer

pytestmark = pytest.mark.timeout(120)
READ_S = 30.0
"""Longest a test waits for the next event of a stream."""


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=90)) as session:
        yield session


async def _next_event(response: aiohttp.ClientResponse) -> tuple[str, str]:
    """The next ``event:``/``data:`` pair of the stream (comments and retry lines skipped)."""
    name, data = "", ""
    while True:
        raw = await asyncio.wait_for(response.content.readline(), READ_S)
        assert raw, "the stream ended"
        line = raw.decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
        elif not line and name:
            return name, data


async def test_a_reply_made_meanwhile_is_announced(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    url = f"{played.url}/sessions/{played.session_id}/live"
    headers = {"Authorization": f"Bearer {played.token}"}
    async with http.get(url, headers=headers) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/event-stream")
        name, _ = await _next_event(response)
        assert name == "hello"
        await asyncio.to_thread(played.console, "The lamp flickers.")
        name, data = await _next_event(response)
        assert name == "changed" and "activity" in data


async def test_the_stream_needs_a_token_of_the_realm(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    url = f"{played.url}/sessions/{played.session_id}/live"
    async with http.get(url, allow_redirects=False) as response:
        assert response.status in (303, 401)  # a browser is sent to log in
        assert not response.headers.get("Content-Type", "").startswith("text/event-stream")
    stranger = played.issue("read", "telegram:elsewhere")
    async with http.get(url, headers={"Authorization": f"Bearer {stranger}"}) as response:
        assert response.status == 404


async def test_the_hub_wakes_streams_on_timeline_events_only() -> None:
    bus = EventBus()
    hub = LiveHub()
    assert hub.attach(bus) and not LiveHub().attach(object())
    waiter = hub.register()
    bus.emit(Event(name="memory.compacted"))
    assert not waiter.is_set()
    for prefix in LIVE_PREFIXES:
        bus.emit(Event(name=f"{prefix}committed"))
        assert waiter.is_set()
        waiter.clear()
    hub.release(waiter)
    assert hub.streams == 0
    hub.close()
    assert hub.closing
    second = hub.register()
    bus.emit(Event(name="floor.committed"))  # unsubscribed on close
    assert not second.is_set()


async def test_the_hub_refuses_streams_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "MAX_LIVE_STREAMS", 2)
    hub = LiveHub()
    first, second = hub.register(), hub.register()
    with pytest.raises(web.HTTPServiceUnavailable):
        hub.register()
    hub.release(first)
    assert hub.register() is not None
    hub.close()
    assert second.is_set()  # closing wakes every stream so it ends


async def test_a_stream_ends_at_its_bound_and_the_browser_reconnects(
    http: aiohttp.ClientSession, played: PlayedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "MAX_STREAM_S", 0.5)
    monkeypatch.setattr(live, "LIVE_CHECK_S", 0.1)
    url = f"{played.url}/sessions/{played.session_id}/live"
    async with http.get(url, headers={"Authorization": f"Bearer {played.token}"}) as response:
        body = await asyncio.wait_for(response.read(), READ_S)  # ends by itself
    text = body.decode()
    assert text.startswith(f"retry: {live.RETRY_MS}") and "event: hello" in text


async def test_a_change_no_event_announced_is_seen_by_looking(
    http: aiohttp.ClientSession, played: PlayedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A turn taken by another process emits no event here: the stream's own look finds it."""
    monkeypatch.setattr(live, "LIVE_CHECK_S", 0.2)
    hub = played.web[live.HUB_KEY]

    async def deaf() -> None:
        for unsubscribe in hub._unsubscribe:
            unsubscribe()
        hub._unsubscribe.clear()

    async def hearing() -> None:
        hub.attach(played.app.events)

    played.call(deaf())
    try:
        url = f"{played.url}/sessions/{played.session_id}/live"
        async with http.get(url, headers={"Authorization": f"Bearer {played.token}"}) as response:
            assert (await _next_event(response))[0] == "hello"
            await asyncio.to_thread(played.console, "The fog rolls in.")
            name, _ = await _next_event(response)
            assert name == "changed"
    finally:
        played.call(hearing())
