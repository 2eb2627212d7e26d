"""Every command, document imports and access rules on the real engine."""

from __future__ import annotations

import json

import pytest

from engine.errors import NotFoundError
from engine.turns.api import MAIN_BRANCH
from tests.conftest import ST_FIXTURES
from tests.fakes.openai_server import FakeReply
from tests.test_telegram.real_engine import RealHarness, counter, real, telegram_key

__all__ = ["real"]
pytestmark = pytest.mark.timeout(90)
CARD = ST_FIXTURES / "card_v2v3_Seraphina.png"
PRESET = ST_FIXTURES / "preset_cc_ST_Default.json"
WORLDBOOK = ST_FIXTURES / "worldinfo_Eldoria.json"


async def test_each_command_works_on_the_real_engine(real: RealHarness) -> None:
    tg, svc = real.tg, real.svc
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    key = telegram_key(chat)
    assert (await real.ask(chat, ann, "/start", "Session ready")).startswith("Session ready")
    assert (await svc.session_info(key)).key == key

    assert "mood = 5" in await real.ask(chat, ann, "/setvar mood 5", "Set mood")
    assert (await svc.variables(key, MAIN_BRANCH, "chat")) == {"mood": 5}
    await real.ask(chat, ann, "/setvar gold 12 branch", "Set gold")
    assert (await svc.variables(key, MAIN_BRANCH, "branch")) == {"gold": 12}
    merged = await real.ask(chat, ann, "/vars", "Variables")
    assert merged == "Variables (merged view, branch main):\ngold = 12\nmood = 5"
    assert await real.ask(chat, ann, "/vars chat", "Variables") == (
        "Variables (chat scope, branch main):\nmood = 5"
    )
    assert (await real.ask(chat, ann, "/getvar gold", "gold")).startswith(
        "gold = 12\n  branch: 12"
    )
    assert await real.ask(chat, ann, "/delvar gold branch", "Deleted") == (
        "Deleted gold (branch scope)."
    )
    assert "gold" not in await svc.variables(key, MAIN_BRANCH)
    assert "not set" in await real.ask(chat, ann, "/getvar gold", "gold")

    reply = await real.reply_to(chat, ann, "Hello")
    assert reply.text == "Reply 1: Hello"
    await tg.send_text(chat, ann, "/regen")
    await tg.wait_until(lambda: counter(reply) == "2/2")
    assert reply.text == "Reply 2: Hello"

    assert "the default character" in await real.ask(chat, ann, "/character", "Character")
    assert "none" in await real.ask(chat, ann, "/preset", "Preset")
    assert "none" in await real.ask(chat, ann, "/worldbook", "World books")
    assert "Ann" in await real.ask(chat, ann, "/persona", "You play as")
    assert "memory is not enabled" in await real.ask(chat, ann, "/memory", "⚠️")
    preview = await real.ask(chat, ann, "/preview mood is {{getvar::mood}}", "mood is")
    assert preview == "mood is 5"
    dry = await real.ask(chat, ann, "/dryrun What now?", "Prompt for this message")
    assert "[user] What now?" in dry and "Reply 2: Hello" in dry
    assert len(real.llm.chat_requests) == 2  # a dry run never calls the model

    await tg.send_text(chat, ann, "/export")
    exported = await tg.wait_for("sendDocument")
    filename, data = exported.params["document"]
    assert filename == f"chat-{chat['id']}-main.jsonl"
    lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
    said = [entry.get("mes") for entry in lines]
    assert "Hello" in said and "Reply 2: Hello" in said

    await tg.send_text(chat, ann, "/branch")
    note = await real.wait_text(chat["id"], lambda t: t.startswith("Branched"))
    assert "after floor 1" in (note.text or "")
    listing = await real.ask(chat, ann, "/branches", "Branches")
    assert "now on b2" in listing
    assert len((await svc.session_info(key)).branches) == 2

    assert "starts over" in await real.ask(chat, ann, "/reset", "The story")
    assert await svc.history(key, MAIN_BRANCH) == []
    again = await real.reply_to(chat, ann, "After the reset")
    assert again.text == "Reply 3: After the reset"
    assert [v.floor for v in await svc.history(key, MAIN_BRANCH)] == [2]


async def test_a_card_sent_as_a_document_becomes_the_chats_character(real: RealHarness) -> None:
    tg = real.tg
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    await tg.send_document(
        chat, ann, filename=CARD.name, data=CARD.read_bytes(), mime_type="image/png"
    )
    confirmed = await real.wait_text(chat["id"], lambda t: t.startswith("Imported"))
    assert (confirmed.text or "").startswith(
        "Imported character card “Seraphina” and bound it to this chat."
    )
    assert "• greetings: " in (confirmed.text or "")
    greetings = int((confirmed.text or "").split("• greetings: ")[1].split()[0])
    info = await real.svc.session_info(telegram_key(chat))
    assert info.character == "Seraphina"
    # the story opens with her first message, the alternate greetings as pages to swipe
    greeting = await real.wait_text(chat["id"], lambda t: t.startswith("You wake with a start"))
    await tg.wait_until(lambda: greeting.reply_markup is not None)
    assert counter(greeting) == f"1/{greetings}" and greeting.html is not None
    assert greeting.html.startswith("<i>You wake with a start")
    assert "Seraphina" in await real.ask(chat, ann, "/character", "Character")

    await real.reply_to(chat, ann, "Who are you?")
    prompt = " ".join(str(m.get("content")) for m in real.llm.chat_requests[-1].messages)
    assert "Seraphina's Personality" in prompt and "Who are you?" in prompt
    assert "You wake with a start" in prompt
    await tg.wait_until(lambda: greeting.reply_markup is None)  # moved to the newest reply
    floors = [v.floor for v in await real.svc.history(telegram_key(chat), MAIN_BRANCH)]
    assert floors == [1, 2]

    # a preset and a world book are imported and bound the same way
    await tg.send_document(chat, ann, filename=PRESET.name, data=PRESET.read_bytes())
    await real.wait_text(chat["id"], lambda t: t.startswith("Imported preset"))
    await tg.send_document(chat, ann, filename=WORLDBOOK.name, data=WORLDBOOK.read_bytes())
    await real.wait_text(chat["id"], lambda t: t.startswith("Imported world book"))
    info = await real.svc.session_info(telegram_key(chat))
    assert info.preset == PRESET.stem and info.worldbooks == (WORLDBOOK.stem,)


async def test_malformed_files_get_a_clear_error_and_change_nothing(real: RealHarness) -> None:
    tg = real.tg
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    await tg.send_document(chat, ann, filename="broken.json", data=b'{"name": "X", "first_')
    bad_json = await real.wait_text(chat["id"], lambda t: "broken.json" in t)
    assert (bad_json.text or "").startswith("⚠️ Could not import broken.json: ")
    assert "not valid JSON" in (bad_json.text or "")
    # a card the detector accepts but the engine's parser refuses (no name)
    await tg.send_document(
        chat, ann, filename="nameless.json", data=b'{"spec": "chara_card_v2", "data": {}}'
    )
    refused = await real.wait_text(chat["id"], lambda t: "nameless.json" in t)
    assert (refused.text or "").startswith("⚠️ Could not import nameless.json")
    cut = CARD.read_bytes()[:200]
    await tg.send_document(chat, ann, filename="cut.png", data=cut, mime_type="image/png")
    assert await real.wait_text(chat["id"], lambda t: "cut.png" in t and "⚠️" in t)
    assert (await real.svc.session_info(telegram_key(chat))).character is None


async def test_a_group_member_without_admin_rights_cannot_setvar(real: RealHarness) -> None:
    tg, svc = real.tg, real.svc
    owner, admin, bob = tg.new_user("Olga"), tg.new_user("Adam"), tg.new_user("Bob")
    group = tg.group("Tavern", owner=owner, admins=(admin,), members=(bob,))
    key = telegram_key(group)
    await tg.send_text(group, bob, "/start")
    await real.wait_text(group["id"], lambda t: "Only group admins" in t)
    with pytest.raises(NotFoundError):
        await svc.session_info(key)
    await real.ask(group, owner, "/start", "Session ready")
    assert await real.ask(group, bob, "/setvar gold 100", "Only") == (
        "Only group admins can use /setvar here."
    )
    await real.ask(group, admin, "/setvar gold 5", "Set gold")
    await real.ask(group, bob, "/delvar gold", "Only")
    await tg.send_document(
        group, bob, filename=CARD.name, data=CARD.read_bytes(), mime_type="image/png"
    )
    await real.wait_text(group["id"], lambda t: "Only group admins can import" in t)
    assert await svc.variables(key, MAIN_BRANCH, "chat") == {"gold": 5}
    assert (await svc.session_info(key)).character is None
    # members still read and play; replies in groups carry the character's name
    assert (await real.ask(group, bob, "/getvar gold", "gold")).startswith("gold = 5")
    reply = await real.reply_to(group, bob, "Hi all")
    assert "Hi all" in (reply.text or "") and reply.html is not None
    assert reply.html.startswith("<b>")


async def test_two_chats_never_see_each_others_variables(real: RealHarness) -> None:
    tg, svc, llm = real.tg, real.svc, real.llm
    ann, bob = tg.new_user("Ann"), tg.new_user("Bob")
    room_a, room_b = tg.private_chat(ann), tg.private_chat(bob)
    await real.ask(room_a, ann, "/setvar secret 42 global", "Set secret")
    await real.ask(room_a, ann, "/setvar mine a", "Set mine")
    await real.ask(room_b, bob, "/setvar mine b", "Set mine")
    assert "secret" not in await real.ask(room_b, bob, "/vars global", "No variables")
    assert "mine = b" in await real.ask(room_b, bob, "/vars", "Variables")
    assert "not set" in await real.ask(room_b, bob, "/getvar secret", "secret")
    assert await real.ask(room_b, bob, "/preview [{{getglobalvar::secret}}]", "[") == "[]"
    assert await real.ask(room_a, ann, "/preview [{{getglobalvar::secret}}]", "[") == "[42]"
    assert await svc.variables(telegram_key(room_a), MAIN_BRANCH, "global") == {"secret": 42}
    assert await svc.variables(telegram_key(room_b), MAIN_BRANCH, "global") == {}
    # a turn in one chat never reaches the other's prompt
    llm.script(FakeReply(text="Noted, Ann."))
    await real.reply_to(room_a, ann, "My password is swordfish")
    await real.reply_to(room_b, bob, "What do you know?")
    prompt = " ".join(str(m.get("content")) for m in llm.chat_requests[-1].messages)
    assert "swordfish" not in prompt and "Noted, Ann." not in prompt


async def test_persona_names_the_player_in_the_prompt(real: RealHarness) -> None:
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    assert "/persona Name | description" in await real.ask(chat, ann, "/persona", "You play")
    set_reply = await real.ask(chat, ann, "/persona Lady Ann | A knight errant", "Persona")
    assert set_reply == "Persona set: you play as Lady Ann in this chat."
    shown = await real.ask(chat, ann, "/persona", "You play")
    assert shown == "You play as Lady Ann ({{user}}).\nA knight errant"
    await real.reply_to(chat, ann, "I draw my sword")
    prompt = " ".join(str(m.get("content")) for m in llm.chat_requests[-1].messages)
    assert "Lady Ann" in prompt
    assert "again" in await real.ask(chat, ann, "/persona clear", "Persona dropped")
    assert "/persona Name" in await real.ask(chat, ann, "/persona", "You play")
    # a persona is per person: another chat's player is not renamed
    bob = tg.new_user("Bob")
    other = tg.private_chat(bob)
    assert "Lady Ann" not in await real.ask(other, bob, "/persona", "You play")


async def test_memory_lists_what_the_story_remembers(real: RealHarness) -> None:
    tg = real.tg
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    refused = await real.ask(chat, ann, "/memory", "⚠️")
    assert "memory is not enabled" in refused
    await real.restart(offline=True, memory=True)
    await real.ask(chat, ann, "/start", "Session ready")
    await real.svc.configure(
        telegram_key(chat), prompt_mode="compat_plus", slots=["narrator", "memory"]
    )
    assert "No memories yet" in await real.ask(chat, ann, "/memory", "No memories")
    reply = await real.reply_to(chat, ann, "The key is under the blue stone")
    assert "You said: The key is under the blue stone" in (reply.text or "")
    await real.svc.drain(10.0)  # the memory agent runs after the commit
    listing = await real.ask(chat, ann, "/memory", "Memories")
    assert listing.startswith("Memories (newest first, branch main):\n• [")
    assert "blue stone" in listing
    found = await real.ask(chat, ann, "/memory blue stone", "Memories")
    assert "matching 'blue stone'" in found and "blue stone" in found.split("\n", 1)[1]
