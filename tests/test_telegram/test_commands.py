"""Every command through the real aiogram client, in a private chat."""

from __future__ import annotations

import json

import pytest

from engine.turns.api import MemoryView
from tests.test_telegram.conftest import Harness


@pytest.fixture
async def chat(harness: Harness) -> tuple[dict, dict]:
    await harness.start()
    alice = harness.server.new_user("Alice")
    return alice, harness.server.private_chat(alice)


async def _ask(harness: Harness, chat: tuple[dict, dict], text: str, expect: str) -> str:
    alice, room = chat
    before = len(harness.texts(room["id"]))
    await harness.server.send_text(room, alice, text)

    def arrived() -> bool:
        texts = harness.texts(room["id"])
        return len(texts) > before and any(expect in t for t in texts[before:])

    await harness.server.wait_until(arrived)
    return next(t for t in harness.texts(room["id"])[before:] if expect in t)


async def test_start(harness: Harness, chat) -> None:
    text = await _ask(harness, chat, "/start", "Session ready")
    assert "the default character" in text


async def test_setvar_getvar_vars_delvar(harness: Harness, chat) -> None:
    assert await _ask(harness, chat, "/setvar hp 10", "Set hp") == "Set hp = 10 (chat scope)."
    await _ask(harness, chat, '/setvar title "Sir Knight" branch', "Set title")
    await _ask(harness, chat, "/setvar bag [1, 2]", "Set bag")
    got = await _ask(harness, chat, "/getvar hp", "hp = 10")
    assert got.startswith("hp = 10")
    listing = await _ask(harness, chat, "/vars", "Variables")
    assert listing.splitlines()[1:] == ["bag = [1, 2]", "hp = 10", "title = Sir Knight"]
    branch_only = await _ask(harness, chat, "/vars branch", "Variables")
    assert branch_only.splitlines()[1:] == ["title = Sir Knight"]
    assert "Unknown scope" in await _ask(harness, chat, "/vars nowhere", "Unknown scope")
    assert await _ask(harness, chat, "/delvar hp", "Deleted") == "Deleted hp (chat scope)."
    assert "not set" in await _ask(harness, chat, "/getvar hp", "not set")
    failed = await _ask(harness, chat, "/delvar hp", "⚠️")
    assert "no chat variable 'hp'" in failed
    assert (await _ask(harness, chat, "/setvar lonely", "Usage")).startswith("Usage: /setvar")
    _, room = chat
    key = next(iter(harness.service.sessions))
    assert harness.service.sessions[key].chat_vars == {"bag": [1, 2]}


async def test_character_preset_worldbook_persona_memory(harness: Harness, chat) -> None:
    assert "Character: the default character" in await _ask(harness, chat, "/character", "Char")
    assert "Preset: none" in await _ask(harness, chat, "/preset", "Preset")
    assert "World books: none" in await _ask(harness, chat, "/worldbook", "World books")
    assert "You play as Alice" in await _ask(harness, chat, "/persona", "play as")
    set_ = await _ask(harness, chat, "/persona Lyra | a bard", "Persona set")
    assert set_ == "Persona set: you play as Lyra in this chat."
    alice, _ = chat
    key = next(iter(harness.service.sessions))
    assert harness.service.personas[(key.realm, str(alice["id"]))] == ("Lyra", "a bard")
    assert "Lyra" in await _ask(harness, chat, "/persona", "play as")
    harness.service.remember(
        key.realm,
        MemoryView(id="m1", kind="fact", text="The well is cursed", scope="chat", importance=0.8),
    )
    listed = await _ask(harness, chat, "/memory", "Memories")
    assert "The well is cursed" in listed and "branch main" in listed
    assert "No memories" in await _ask(harness, chat, "/memory dragons", "No memories")


async def test_regen_adds_a_page(harness: Harness, chat) -> None:
    await _ask(harness, chat, "Hi", "You said")
    alice, room = chat
    reply = harness.server.bot_messages(room["id"])[-1]
    await harness.server.send_text(room, alice, "/regen")
    await harness.server.wait_until(lambda: reply.text.endswith("(take 2)"))
    await harness.server.wait_until(lambda: reply.reply_markup is not None)
    assert reply.reply_markup["inline_keyboard"][0][1]["text"] == "2/2"
    assert len(harness.texts(room["id"])) == 1  # edited in place


async def test_regen_before_any_reply_explains(harness: Harness, chat) -> None:
    assert "nothing to regenerate" in await _ask(harness, chat, "/regen", "⚠️")


async def test_reset_starts_over(harness: Harness, chat) -> None:
    await _ask(harness, chat, "Hi", "You said")
    await _ask(harness, chat, "/reset", "starts over")
    key = next(iter(harness.service.sessions))
    assert await harness.service.history(key, "main") == []


async def test_export_sends_jsonl_document(harness: Harness, chat) -> None:
    await _ask(harness, chat, "Hi", "You said")
    alice, room = chat
    await harness.server.send_text(room, alice, "/export")
    sent = await harness.server.wait_for("sendDocument")
    upload = harness.server.world.uploads[-1]
    assert upload["filename"] == f"chat-{room['id']}-main.jsonl"
    lines = [json.loads(line) for line in upload["data"].decode().splitlines()]
    assert lines[0]["mes"].endswith("Alice: Hi")
    assert sent.params["caption"].startswith("Branch main")


async def test_preview_and_dryrun(harness: Harness, chat) -> None:
    assert await _ask(harness, chat, "/preview I am {{char}}", "I am") == "I am Seraphina"
    dry = await _ask(harness, chat, "/dryrun <hello>", "Prompt")
    assert dry == "Prompt for this message: 1 messages\n[user] <hello>"


async def test_unknown_command_is_answered(harness: Harness, chat) -> None:
    assert "Unknown command" in await _ask(harness, chat, "/nosuch", "Unknown")
