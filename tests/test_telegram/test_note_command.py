"""``/note`` through the real aiogram client: show, set, change options, refuse, clear; in
groups only admins change the note."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from adapters.telegram.routers.commands import COMMANDS, GROUP_READS
from engine.prompt.inputs import NOTE_IN_PROMPT, AuthorNote
from engine.turns.notes import MAX_NOTE_INTERVAL
from tests.test_telegram.conftest import Harness


def _asker(
    harness: Harness, room: dict[str, Any], user: dict[str, Any]
) -> Callable[[str, str], Awaitable[str]]:
    """Send a line as ``user`` and wait for the first answer that contains ``expect``."""
    srv = harness.server

    async def ask(text: str, expect: str) -> str:
        before = len(harness.texts(room["id"]))
        await srv.send_text(room, user, text)

        def arrived() -> bool:
            return any(expect in t for t in harness.texts(room["id"])[before:])

        await srv.wait_until(arrived)
        return next(t for t in harness.texts(room["id"])[before:] if expect in t)

    return ask


async def test_note_in_a_private_chat(harness: Harness) -> None:
    await harness.start()
    srv = harness.server
    alice = srv.new_user("Alice")
    room = srv.private_chat(alice)
    ask = _asker(harness, room, alice)

    await ask("/start", "Session ready")
    key = next(iter(harness.service.sessions))
    shown = await ask("/note", "No Author's Note.")
    assert "usage: /note" in shown
    made = await ask("/note depth=0 role=assistant Tell it <briefly> & plainly.", "Set.")
    assert made == (
        "Set. Author's Note (in the chat at depth 0 as assistant, every turn): "
        "Tell it <briefly> & plainly."
    )
    await ask("/note position=in_prompt interval=2", "Set.")
    expected = AuthorNote(
        text="Tell it <briefly> & plainly.", depth=0, role=2, interval=2, position=NOTE_IN_PROMPT
    )
    assert harness.service.sessions[key].note == expected
    refused = await ask(f"/note interval={MAX_NOTE_INTERVAL + 1}", "⚠️")
    assert f"author_note.interval must be a whole number from 0 to {MAX_NOTE_INTERVAL}" in refused
    assert "unknown /note option 'dept'" in await ask("/note dept=1 hi", "⚠️")
    assert harness.service.sessions[key].note == expected
    shown = await ask("/note", "Author's Note (")
    assert shown.startswith("Author's Note (after the main prompt, every 2 user messages)")
    assert await ask("/note off", "cleared") == "Author's Note cleared."
    assert harness.service.sessions[key].note is None


async def test_only_admins_change_the_note_in_a_group(harness: Harness) -> None:
    await harness.start()
    srv, service = harness.server, harness.service
    owner, bob = srv.new_user("Olga"), srv.new_user("Bob")
    group = srv.group("Tavern", owner=owner, members=(bob,))
    await srv.send_text(group, owner, "/start")
    await harness.wait_text(group["id"], lambda t: t.startswith("Session ready"))
    await srv.send_text(group, owner, "/note The inn is on fire.")
    await harness.wait_text(group["id"], lambda t: t.startswith("Set."))
    key = next(iter(service.sessions))
    assert service.sessions[key].note == AuthorNote(text="The inn is on fire.")

    for attempt in ("/note Nothing happens.", "/note off", "/note depth=1"):
        await srv.send_text(group, bob, attempt)
    await harness.server.wait_until(
        lambda: (
            harness.texts(group["id"]).count(
                "Only group admins can change the Author's Note here."
            )
            == 3
        )
    )
    assert service.sessions[key].note == AuthorNote(text="The inn is on fire.")
    # Members still read it.
    await srv.send_text(group, bob, "/note")
    await harness.wait_text(group["id"], lambda t: t.endswith("): The inn is on fire."))
    assert "note" in COMMANDS and "note" in GROUP_READS


async def test_info_shows_the_note_in_one_line(harness: Harness) -> None:
    await harness.start()
    srv = harness.server
    alice = srv.new_user("Alice")
    room = srv.private_chat(alice)
    ask = _asker(harness, room, alice)

    await ask("/start", "Session ready")
    before = await ask("/info", "Character: ")
    assert "Branch: main; branches: main (" in before
    assert before.splitlines()[-1] == "No Author's Note."
    await ask("/note depth=2 Keep it short.", "Set.")
    shown = await ask("/info", "Character: ")
    assert shown.splitlines()[-1] == (
        "Author's Note (in the chat at depth 2 as system, every turn): Keep it short."
    )
    await ask("/note off", "cleared")
    assert await ask("/info", "Character: ") == before
    assert "info" in COMMANDS and "info" in GROUP_READS
