"""Access: admins write in groups, chats never see each other, the private allow-list."""

from __future__ import annotations

from tests.test_telegram.conftest import Harness


async def test_group_member_without_admin_rights_cannot_setvar(harness: Harness) -> None:
    await harness.start()
    srv, service = harness.server, harness.service
    owner, admin, bob = srv.new_user("Olga"), srv.new_user("Adam"), srv.new_user("Bob")
    group = srv.group("Tavern", owner=owner, admins=(admin,), members=(bob,))
    await srv.send_text(group, bob, "/start")
    refused = await harness.wait_text(group["id"], lambda t: "Only group admins" in t)
    assert "start" in refused.text
    assert service.sessions == {}
    await srv.send_text(group, owner, "/start")
    await harness.wait_text(group["id"], lambda t: t.startswith("Session ready"))

    await srv.send_text(group, bob, "/setvar gold 100")
    denied = await harness.wait_text(group["id"], lambda t: "/setvar" in t)
    assert denied.text == "Only group admins can use /setvar here."
    await srv.send_text(group, admin, "/setvar gold 5")
    await harness.wait_text(group["id"], lambda t: t.startswith("Set gold"))
    await srv.send_text(group, bob, "/delvar gold")
    await harness.wait_text(group["id"], lambda t: "/delvar here" in t)
    await srv.send_text(group, bob, "/reset")
    await harness.wait_text(group["id"], lambda t: "/reset here" in t)
    key = next(iter(service.sessions))
    assert service.sessions[key].chat_vars == {"gold": 5}
    assert not [c for c in service.calls if c[0] == "reset"]
    # Members still read and play.
    await srv.send_text(group, bob, "/getvar gold")
    assert await harness.wait_text(group["id"], lambda t: t.startswith("gold = 5"))


async def test_group_member_cannot_import(harness: Harness) -> None:
    await harness.start()
    srv = harness.server
    owner, bob = srv.new_user("Olga"), srv.new_user("Bob")
    group = srv.group("Tavern", owner=owner, members=(bob,))
    await srv.send_text(group, owner, "/start")
    await harness.wait_text(group["id"], lambda t: t.startswith("Session ready"))
    await srv.send_document(
        group, bob, filename="card.json", data=b'{"name": "X", "first_mes": "hi"}'
    )
    assert await harness.wait_text(group["id"], lambda t: "Only group admins can import" in t)
    assert not [c for c in harness.service.calls if c[0] == "import_asset"]


async def test_two_chats_never_see_each_others_variables(harness: Harness) -> None:
    await harness.start()
    srv = harness.server
    alice, bob = srv.new_user("Alice"), srv.new_user("Bob")
    room_a, room_b = srv.private_chat(alice), srv.private_chat(bob)
    await srv.send_text(room_a, alice, "/setvar secret 42 global")
    await srv.send_text(room_a, alice, "/setvar mine a")
    await srv.send_text(room_b, bob, "/setvar mine b")
    await harness.wait_text(room_a["id"], lambda t: t.startswith("Set mine"))
    await harness.wait_text(room_b["id"], lambda t: t.startswith("Set mine"))
    await srv.send_text(room_b, bob, "/vars")
    await srv.send_text(room_b, bob, "/vars global")
    await srv.send_text(room_b, bob, "/getvar secret")
    seen_b = await harness.wait_text(room_b["id"], lambda t: "secret is not set" in t)
    assert seen_b is not None
    texts_b = "\n".join(harness.texts(room_b["id"]))
    assert "42" not in texts_b and "mine = a" not in texts_b
    assert "mine = b" in texts_b and "No variables (global scope" in texts_b
    await srv.send_text(room_a, alice, "/vars")
    seen_a = await harness.wait_text(room_a["id"], lambda t: t.startswith("Variables"))
    assert seen_a.text.splitlines()[1:] == ["mine = a", "secret = 42"]
    # Replies never cross chats either.
    await srv.send_text(room_a, alice, "only for Alice")
    await harness.wait_text(room_a["id"], lambda t: t.endswith("only for Alice"))
    assert not any("only for Alice" in t for t in harness.texts(room_b["id"]))


async def test_allow_list_refuses_other_private_chats(harness: Harness) -> None:
    srv = harness.server
    alice, mallory = srv.new_user("Alice"), srv.new_user("Mallory")
    await harness.start(allowed_users=frozenset({int(alice["id"])}))
    room_a, room_m = srv.private_chat(alice), srv.private_chat(mallory)
    await srv.send_text(room_m, mallory, "let me in")
    refused = await harness.wait_text(room_m["id"], lambda t: "only plays with" in t)
    assert refused is not None
    await srv.send_text(room_a, alice, "hello")
    await harness.wait_text(room_a["id"], lambda t: t.endswith("hello"))
    opened = [c[1] for c in harness.service.calls if c[0] == "open_session"]
    assert all(key.realm == str(alice["id"]) for key in opened)


async def test_group_commands_addressed_to_another_bot_are_ignored(harness: Harness) -> None:
    await harness.start()
    srv = harness.server
    owner = srv.new_user("Olga")
    group = srv.group("G", owner=owner)
    await srv.send_text(group, owner, "/start@tavern_bot")
    await harness.wait_text(group["id"], lambda t: t.startswith("Session ready"))
    await srv.send_text(group, owner, "/setvar x 1")
    await harness.wait_text(group["id"], lambda t: t.startswith("Set x"))
    await srv.send_text(group, owner, "/vars@other_bot")
    await srv.send_text(group, owner, "/vars@tavern_bot")
    await harness.wait_text(group["id"], lambda t: t.startswith("Variables"))
    texts = harness.texts(group["id"])
    assert len([t for t in texts if t.startswith("Variables")]) == 1
