"""Messages sent while a turn runs are collected into the next floor."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.test_telegram.conftest import Harness, Json, StreamingService


class GatedService(StreamingService):
    """Holds the turn whose first line is ``"hold"`` until ``gate`` opens."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.holding = asyncio.Event()

    async def respond(
        self, key: Any, branch: str, lines: Any, *, on_text: Any = None, **kw: Any
    ) -> Any:
        if lines[0].text == "hold":
            self.holding.set()
            await self.gate.wait()
        return await super().respond(key, branch, lines, on_text=on_text, **kw)


async def _hold_a_turn(harness: Harness, **options: Any) -> tuple[GatedService, Json, Json]:
    """Start a bot on a :class:`GatedService`; Alice says "hold" in private and her turn is
    held. Returns the service, Alice and her chat."""
    service = GatedService()
    alice, chat = await harness.start_private(service=service, **options)
    await harness.server.send_text(chat, alice, "hold")
    await asyncio.wait_for(service.holding.wait(), 10)
    return service, alice, chat


async def _release_when_fetched(harness: Harness, service: GatedService, update_id: int) -> None:
    """Let the held turn go once the runner has fetched every update up to ``update_id``, so
    that those messages are already waiting behind it."""
    await harness.server.wait_for(
        "getUpdates", lambda c: (c.params.get("offset") or 0) > update_id
    )
    service.gate.set()


async def test_lines_sent_during_a_turn_become_one_floor(harness: Harness) -> None:
    service, alice, chat = await _hold_a_turn(harness)
    srv = harness.server
    await srv.send_text(chat, alice, "first")
    last = await srv.push_update("message", (await _text(srv, chat, alice, "second")))
    await _release_when_fetched(harness, service, last["update_id"])
    reply = await harness.wait_text(chat["id"], lambda t: "second" in t)
    await srv.wait_until(lambda: len(service.sessions[next(iter(service.sessions))].links) >= 5)
    assert reply.text.endswith("You said: Alice: first / Alice: second")
    floors = [c[1][2] for c in service.calls if c[0] == "respond"]
    assert [[line.text for line in floor] for floor in floors] == [["hold"], ["first", "second"]]
    key = next(iter(service.sessions))
    for line in floors[1]:  # every message of the floor maps back to it
        ref = await service.resolve_message(key, line.ref)
        assert (ref.floor, ref.role) == (2, "user")


async def test_a_command_between_lines_starts_a_new_floor(harness: Harness) -> None:
    service, alice, chat = await _hold_a_turn(harness)
    srv = harness.server
    await srv.send_text(chat, alice, "before")
    await srv.send_text(chat, alice, "/setvar x 1")
    last = await srv.send_text(chat, alice, "after")
    await _release_when_fetched(harness, service, srv.updates[-1]["update_id"])
    await harness.wait_text(chat["id"], lambda t: t.endswith("Alice: after"))
    floors = [[line.text for line in c[1][2]] for c in service.calls if c[0] == "respond"]
    assert floors == [["hold"], ["before"], ["after"]]
    texts = harness.texts(chat["id"])
    assert [t.rsplit(" ", 1)[-1] for t in texts] == ["hold", "before", "scope).", "after"]
    assert last["text"] == "after"


async def _text(srv: Any, chat: dict, user: dict, text: str) -> dict:
    """A user message recorded in the world but not yet queued (pushed by the caller)."""
    return srv._user_message(chat, user, thread_id=None, reply_to=None, text=text)


async def test_without_batching_every_message_is_its_own_floor(harness: Harness) -> None:
    service, alice, chat = await _hold_a_turn(harness, batch_lines=False)
    srv = harness.server
    await srv.send_text(chat, alice, "first")
    await srv.send_text(chat, alice, "second")
    await _release_when_fetched(harness, service, srv.updates[-1]["update_id"])
    await harness.wait_text(chat["id"], lambda t: t.endswith("Alice: second"))
    floors = [[line.text for line in c[1][2]] for c in service.calls if c[0] == "respond"]
    assert floors == [["hold"], ["first"], ["second"]]
