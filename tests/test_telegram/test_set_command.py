"""``/set`` through the real aiogram client (issue 13): list the session's settings, change one
for this chat only, one-line errors for bad options and values, admins only in groups, and
``/info`` shows the same option lines."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from adapters.telegram.routers.commands import COMMANDS, GROUP_READS
from adapters.telegram.routers.session_commands import USAGE
from engine.turns.api import SessionKey
from engine.turns.options import SESSION_OPTION_SPECS
from tests.test_telegram.conftest import Harness

USED = [s.name for s in SESSION_OPTION_SPECS if s.name != "policy"]


def _asker(
    harness: Harness, room: dict[str, Any], user: dict[str, Any]
) -> Callable[[str, str], Awaitable[str]]:
    """Send a line as ``user`` and wait for the first answer after it that starts with
    ``starts``."""
    srv = harness.server

    async def ask(text: str, starts: str) -> str:
        before = len(harness.texts(room["id"]))
        await srv.send_text(room, user, text)

        def arrived() -> str | None:
            return next(
                (t for t in harness.texts(room["id"])[before:] if t.startswith(starts)), None
            )

        await srv.wait_until(lambda: arrived() is not None)
        return arrived() or ""

    return ask


def _key(chat: dict[str, Any]) -> SessionKey:
    return SessionKey(platform="telegram", realm=str(chat["id"]), key=str(chat["id"]))


async def test_set_lists_and_changes_this_chats_settings_only(harness: Harness) -> None:
    await harness.start()
    srv, service = harness.server, harness.service
    ann, bea = srv.new_user("Ann"), srv.new_user("Bea")
    mine, theirs = srv.private_chat(ann), srv.private_chat(bea)
    ask = _asker(harness, mine, ann)
    await _asker(harness, theirs, bea)("/start", "Session ready")
    await ask("/start", "Session ready")

    listing = await ask("/set", "Session settings")
    lines = listing.splitlines()[1:]
    assert [line.split(" = ")[0] for line in lines] == USED  # no reply policy on Telegram
    assert lines[0].startswith("mode = ")
    assert "[compat_strict | compat_plus | native]" in lines[0]
    assert any(line.startswith("budget = ") and "[a number]" in line for line in lines)

    assert await ask("/set mode native", "Set") == "Set mode = native (this chat only)."
    assert await ask("/set TOOLS yes", "Set") == "Set tools = on (this chat only)."
    assert await ask("/set memory off", "Set") == "Set memory = off (this chat only)."
    assert await ask("/set budget 900", "Set") == "Set budget = 900 (this chat only)."
    mine_now = await service.session_info(_key(mine))
    theirs_now = await service.session_info(_key(theirs))
    assert (mine_now.prompt_mode, mine_now.tools, mine_now.memory) == ("native", True, False)
    assert mine_now.memory_budget == 900
    assert (theirs_now.prompt_mode, theirs_now.tools, theirs_now.memory) != (
        "native",
        True,
        False,
    )
    assert theirs_now.memory_budget != 900

    one = await ask("/set mode", "mode = ")
    assert one.startswith("mode = native [compat_strict | compat_plus | native]: ")
    info = await ask("/info", "Character: ")
    assert "Settings (/set changes them):" in info
    for expected in ("mode = native", "tools = on", "memory = off", "budget = 900"):
        assert expected in info.splitlines()
    assert "policy" not in info
    other = await _asker(harness, theirs, bea)("/info", "Character: ")
    assert "mode = native" not in other.splitlines()


async def test_bad_options_and_values_get_one_line_errors(harness: Harness) -> None:
    await harness.start()
    srv, service = harness.server, harness.service
    ann = srv.new_user("Ann")
    room = srv.private_chat(ann)
    ask = _asker(harness, room, ann)
    await ask("/start", "Session ready")
    before = await service.session_info(_key(room))

    bad_value = await ask("/set mode fast", "⚠️")
    assert bad_value == (
        "⚠️ session option mode must be one of compat_strict, compat_plus, native, not 'fast'"
    )
    bad_name = await ask("/set moode native", "⚠️")
    assert bad_name.startswith("⚠️ unknown session option 'moode'; options: mode, tools")
    assert "\n" not in bad_value + bad_name
    assert "budget" in await ask("/set budget lots", "⚠️")
    assert await ask("/set mode native please", "Usage") == USAGE
    assert (await ask("/set policy mention", "Telegram")).startswith(
        "Telegram has no use for policy"
    )
    assert await service.session_info(_key(room)) == before


async def test_in_a_group_only_admins_change_settings(harness: Harness) -> None:
    await harness.start()
    srv, service = harness.server, harness.service
    owner, bob = srv.new_user("Olga"), srv.new_user("Bob")
    group = srv.group("Tavern", owner=owner, members=(bob,))
    await _asker(harness, group, owner)("/start", "Session ready")
    key = _key(group)
    before = await service.session_info(key)

    as_bob = _asker(harness, group, bob)
    refused = await as_bob("/set tools on", "Only")
    assert refused == "Only group admins can change session settings here."
    assert (await as_bob("/set", "Session settings")).count(" = ") == len(USED)  # reading is open
    assert await service.session_info(key) == before
    assert not [c for c in service.calls if c[0] == "set_session_option"]

    done = await _asker(harness, group, owner)("/set tools on", "Set")
    assert done == "Set tools = on (this chat only)."
    assert (await service.session_info(key)).tools


async def test_set_is_registered_for_private_chats_and_admins(harness: Harness) -> None:
    await harness.start()
    registered = {
        scope: [c["command"] for c in commands]
        for (scope, _chat, _lang), commands in harness.server.world.commands.items()
    }
    assert "set" in registered["all_private_chats"]
    assert "set" in registered["all_chat_administrators"]
    assert "set" not in registered["all_group_chats"]
    assert "set" in COMMANDS and "set" not in GROUP_READS
