"""On the real engine: deleting a Discord message hides what it shows, and destroys nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.turns.api import PlatformRef, Speaker, UserLine
from tests.fakes.discord import FakeDiscord
from tests.fakes.openai_server import FakeOpenAIServer
from tests.test_discord.conftest import World
from tests.test_discord.real_engine import (
    CARD_NAME,
    Engine,
    RealStarter,
    key_of,
    narrator_requests,
    prompt_text,
    reply_text,
    say_and_wait,
    start_playing,
    webhook_replies,
)

pytestmark = pytest.mark.timeout(60)


async def _play_two_floors(
    fake: FakeDiscord, world: World, start_real: RealStarter, model: FakeOpenAIServer
) -> list[dict[str, Any]]:
    """Start playing; Alice says two lines in #rp ("Reply 1.", "Reply 2." answer them).

    Returns her two messages, oldest first.
    """
    await start_playing(fake, world, start_real)
    said = []
    for n, text in enumerate(("I order mead.", "I pay in gold."), start=1):
        model.script(reply_text(f"Reply {n}."))
        said.append(
            await say_and_wait(
                fake,
                world.rp,
                world.alice,
                text,
                done=lambda n=n: len(webhook_replies(fake, world.rp.id)) == n,
            )
        )
    return said


async def test_deleting_a_floors_message_hides_the_floor_and_keeps_it(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    said = await _play_two_floors(fake, world, start_real, model)
    key = key_of(world)
    await fake.delete_by_user(said[0])
    await fake.wait_idle(quiet=0.3)
    # Hidden: the floor leaves the history, the prompt and the visible-only export...
    history = await engine.svc.history(key, "main")
    assert [(v.floor, v.text) for v in history] == [(2, "Reply 2.")]
    exported = (await engine.svc.export_chat(key, "main")).decode()
    assert "I order mead." not in exported and "I pay in gold." in exported
    model.script(reply_text("Reply 3."))
    await say_and_wait(
        fake,
        world.rp,
        world.alice,
        "Again?",
        done=lambda: len(webhook_replies(fake, world.rp.id)) == 3,
    )
    prompt = prompt_text(narrator_requests(model)[-1])
    assert "I order mead." not in prompt and "Reply 1." not in prompt
    assert "I pay in gold." in prompt
    # ...but nothing is destroyed: the message still maps to its floor, and numbering goes on.
    ref = await engine.svc.resolve_message(key, said[0]["id"])
    assert ref is not None and (ref.floor, ref.role) == (1, "user")
    assert [v.floor for v in await engine.svc.history(key, "main")] == [2, 3]


def _rows(data: bytes) -> list[dict[str, Any]]:
    """The message lines of a SillyTavern JSONL export (the header left out)."""
    return [json.loads(line) for line in data.decode().splitlines()[1:]]


def _said(rows: list[dict[str, Any]]) -> list[tuple[str, bool, bool]]:
    # A line keeps is_system as it came (absent: not hidden).
    return [(r["mes"], r["is_user"], r.get("is_system", False)) for r in rows]


async def test_an_export_keeps_a_hidden_floor_marked_as_sillytavern_hides_it(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    said = await _play_two_floors(fake, world, start_real, model)
    await fake.delete_by_user(said[0])
    await fake.wait_idle(quiet=0.3)
    hidden_floor = [("I order mead.", True, True), ("Reply 1.", False, True)]
    visible_floor = [("I pay in gold.", True, False), ("Reply 2.", False, False)]
    # /session export keeps what a deletion hid, marked is_system as SillyTavern's /hide does.
    full = await fake.slash(world.rp, world.alice, "session export")
    assert "with hidden floors" in full.text and full.ephemeral
    name, data = full.files[0]
    assert name.endswith("-main.jsonl")
    rows = _rows(data)
    assert _said(rows) == hidden_floor + visible_floor
    assert rows[0]["name"] == "Alice" and rows[1]["name"] == CARD_NAME
    visible = await fake.slash(world.rp, world.alice, "session export", include_hidden=False)
    assert "without hidden floors" in visible.text
    assert _said(_rows(visible.files[0][1])) == visible_floor
    # Imported back, the hidden floor stays hidden: out of the story, still in the export.
    key = key_of(world)
    summary = await engine.svc.import_asset(key, "chat", "again.jsonl", data, bind=False)
    branch = summary.details["branch"]
    assert [(v.floor, v.text) for v in await engine.svc.history(key, branch)] == [(2, "Reply 2.")]
    again = await engine.svc.export_chat(key, branch, include_hidden=True)
    assert _said(_rows(again)) == hidden_floor + visible_floor
    assert _said(_rows(await engine.svc.export_chat(key, branch))) == visible_floor


async def test_a_hidden_page_stays_out_of_the_swipes_unless_hidden_ones_are_asked_for(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    key = key_of(world)
    alice = Speaker(id=str(world.alice.id), name="Alice")
    model.script(reply_text("First take."), reply_text("Second take."))
    await engine.svc.respond(key, "main", [UserLine(speaker=alice, text="Sing.")])
    await engine.svc.regenerate(key, "main")
    # The message that showed page 1 is deleted: page 1 is hidden, page 2 stays active.
    page_one = PlatformRef(branch="main", floor=1, page=1, role="assistant")
    await engine.svc.link_message(key, "shown-page-1", page_one)
    await engine.svc.hide_message(key, "shown-page-1")
    (reply,) = [r for r in _rows(await engine.svc.export_chat(key, "main")) if not r["is_user"]]
    assert (reply["mes"], reply["is_system"]) == ("Second take.", False)
    assert "swipes" not in reply
    (reply,) = [
        r
        for r in _rows(await engine.svc.export_chat(key, "main", include_hidden=True))
        if not r["is_user"]
    ]
    assert (reply["mes"], reply["is_system"]) == ("Second take.", False)
    assert (reply["swipes"], reply["swipe_id"]) == (["First take.", "Second take."], 1)


async def test_a_sillytavern_chat_with_hidden_messages_and_notes_imports_as_it_was_hidden(
    fake: FakeDiscord,
    world: World,
    start_real: RealStarter,
    engine: Engine,
    model: FakeOpenAIServer,
) -> None:
    await start_playing(fake, world, start_real)
    key = key_of(world)
    lines: list[dict[str, Any]] = [
        {"user_name": "Ann", "character_name": CARD_NAME},
        {"name": "Ann", "is_user": True, "mes": "Hello"},
        {"name": CARD_NAME, "is_user": False, "is_system": True, "mes": "Hidden answer"},
        {"name": "System", "is_system": True, "mes": "A note", "extra": {"type": "comment"}},
        {"name": "Ann", "is_user": True, "is_system": True, "mes": "Psst"},
        {"name": "Ann", "is_user": True, "mes": "Again"},
        {"name": CARD_NAME, "is_user": False, "mes": "Shown answer"},
    ]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    summary = await engine.svc.import_asset(key, "chat", "st.jsonl", data, bind=False)
    branch = summary.details["branch"]
    # The hidden reply hides its page; its visible input stays in the story, and the note
    # (a system message type) is an input of the next floor, not a hidden reply.
    views = await engine.svc.history(key, branch)
    assert [(v.floor, v.text) for v in views] == [(1, ""), (2, "Shown answer")]
    exported = _rows(await engine.svc.export_chat(key, branch, include_hidden=True))
    assert _said(exported) == [
        ("Hello", True, False),
        ("Hidden answer", False, True),
        ("A note", False, True),
        ("Psst", True, True),
        ("Again", True, False),
        ("Shown answer", False, False),
    ]
    assert exported[2]["extra"] == {"type": "comment"}  # kept as it came
    assert [r["mes"] for r in _rows(await engine.svc.export_chat(key, branch))] == [
        "Hello",
        "A note",
        "Again",
        "Shown answer",
    ]
    # The hidden input before a visible reply is kept, hidden: out of the prompt too.
    prompt = await engine.svc.dry_run(key, branch, "Next")
    sent = " ".join(m["content"] for m in prompt["messages"])
    assert "Again" in sent and "Shown answer" in sent and "Psst" not in sent
