"""Telegram ``/note depth=2`` with no note: says there is none to change, stores nothing."""

from __future__ import annotations

from engine.turns.notes import NO_NOTE_TO_CHANGE
from tests.test_telegram.conftest import Harness
from tests.test_telegram.test_note_command import _asker


async def test_options_without_a_note_change_nothing(harness: Harness) -> None:
    await harness.start()
    srv = harness.server
    alice = srv.new_user("Alice")
    room = srv.private_chat(alice)
    ask = _asker(harness, room, alice)
    await ask("/start", "Session ready")
    key = next(iter(harness.service.sessions))
    said = await ask("/note depth=2", NO_NOTE_TO_CHANGE)
    assert "\n" not in said
    assert await harness.service.author_note(key) is None
