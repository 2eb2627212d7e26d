"""The runner connects to the fake through real aiogram: startup calls, polling, a first reply."""

from __future__ import annotations

from tests.test_telegram.conftest import Harness


async def test_startup_registers_scoped_commands_and_polls(harness: Harness) -> None:
    await harness.start()
    srv = harness.server
    scopes = {key[0] for key in srv.world.commands}
    assert scopes == {"all_private_chats", "all_group_chats", "all_chat_administrators"}
    private = {c["command"] for c in srv.world.commands[("all_private_chats", None, "")]}
    assert {"start", "vars", "setvar", "branch", "export", "dryrun"} <= private
    members = {c["command"] for c in srv.world.commands[("all_group_chats", None, "")]}
    assert "setvar" not in members and "vars" in members
    poll = await srv.wait_for("getUpdates")
    assert "message_reaction" in poll.params["allowed_updates"]
    assert "callback_query" in poll.params["allowed_updates"]


async def test_private_message_gets_a_reply(harness: Harness) -> None:
    await harness.start()
    alice = harness.server.new_user("Alice")
    chat = harness.server.private_chat(alice)
    await harness.server.send_text(chat, alice, "Hello there")
    reply = await harness.wait_text(chat["id"], lambda t: "Hello there" in t)
    assert reply.parse_mode == "HTML"
    assert reply.text == "Seraphina: I hear you. You said: Alice: Hello there"
