"""Session settings on Telegram (issue 13), on the real engine: what a new session starts with
(compat_plus with the memory block, no tools offered), ``/set`` switching mode, tools and
memory for one chat only (admins only in groups), and the tools at work once switched on."""

from __future__ import annotations

import re
from typing import Any

import pytest

from engine.turns.api import MAIN_BRANCH
from engine.turns.options import SessionDefaults
from tests.fakes.openai_server import FakeReply
from tests.test_telegram.real_engine import (
    RealHarness,
    button,
    counter,
    real,
    set_variable,
    telegram_key,
)

__all__ = ["real"]
pytestmark = pytest.mark.timeout(90)


def _offers_tools(body: Any) -> bool:
    return bool(body.get("tools"))


async def test_a_new_sessions_dry_run_shows_memory_and_offers_no_tools(
    real: RealHarness,
) -> None:
    """The default config, as ``tavernbot run`` builds it: memory on, compat_plus."""
    await real.restart(memory=True)
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    llm.script(FakeReply(text="It glints. <summary>Ann found a silver key in the well</summary>"))
    reply = await real.reply_to(chat, ann, "I look into the well")
    assert reply.text == "It glints."  # the summary tag is never shown
    await real.svc.drain(10.0)  # the memory step after the commit
    info = await real.svc.session_info(telegram_key(chat))
    assert (info.prompt_mode, info.tools, info.memory) == ("compat_plus", False, True)

    shown = await real.ask(chat, ann, "/dryrun Where is the key?", "Prompt for this message")
    # the memory block is its own system message, up to the next message's label
    labels = [m.start() for m in re.finditer(r"^\[(system|user|assistant)[^\]]*\] ", shown, re.M)]
    blocks = [shown[a:b] for a, b in zip(labels, [*labels[1:], len(shown)], strict=True)]
    memory = [b for b in blocks if b.startswith("[system, memory] ")]
    assert len(memory) == 1 and "Ann found a silver key in the well" in memory[0]
    assert not any("silver key" in b for b in blocks if b not in memory)
    assert "tools offered: none" in shown.splitlines()
    # the next real turn's prompt carries the memory block too, and no request offered tools
    await real.reply_to(chat, ann, "Where is the key?")
    prompts = [r for r in llm.chat_requests if r.last_user_text == "Where is the key?"]
    assert prompts and any(
        "silver key in the well" in str(m.get("content"))
        for m in prompts[0].messages
        if m.get("role") == "system"
    )
    assert llm.chat_requests and not any(_offers_tools(r.body) for r in llm.chat_requests)


async def test_set_tools_on_then_set_variable_swipes_with_its_page(real: RealHarness) -> None:
    tg, llm = real.tg, real.llm
    ann = tg.new_user("Ann")
    chat = tg.private_chat(ann)
    await tg.send_text(chat, ann, "/start")
    await real.wait_text(chat["id"], lambda t: t.startswith("Session ready"))
    assert await real.ask(chat, ann, "/set tools on", "Set") == "Set tools = on (this chat only)."

    llm.script(set_variable("mood", "happy"), FakeReply(text="She smiles."))
    reply = await real.reply_to(chat, ann, "Hi")
    assert reply.text == "She smiles." and counter(reply) == "1/1"
    assert _offers_tools(llm.chat_requests[-2].body)
    assert "mood = happy" in await real.ask(chat, ann, "/vars", "Variables")

    llm.script(set_variable("mood", "grim"), FakeReply(text="She frowns."))
    await tg.press(chat, ann, reply.message_id, button(reply, "🔄"))
    await tg.wait_until(lambda: counter(reply) == "2/2")
    assert reply.text == "She frowns."
    assert "mood = grim" in await real.ask(chat, ann, "/vars", "Variables")

    await tg.press(chat, ann, reply.message_id, button(reply, "◀️"))
    await tg.wait_until(lambda: counter(reply) == "1/2")
    assert reply.text == "She smiles."
    shown = await real.ask(chat, ann, "/vars", "Variables")
    assert shown == "Variables (merged view, branch main):\nmood = happy"


async def test_set_changes_one_chat_only_and_only_admins_change_a_group(
    real: RealHarness,
) -> None:
    tg, llm = real.tg, real.llm
    ann, bea = tg.new_user("Ann"), tg.new_user("Bea")
    mine, theirs = tg.private_chat(ann), tg.private_chat(bea)
    await real.reply_to(mine, ann, "one")
    await real.reply_to(theirs, bea, "one")
    for line in ("/set mode compat_strict", "/set tools on", "/set memory off"):
        assert (await real.ask(mine, ann, line, "Set ")).endswith("(this chat only).")
    mine_info = await real.svc.session_info(telegram_key(mine))
    theirs_info = await real.svc.session_info(telegram_key(theirs))
    assert (mine_info.prompt_mode, mine_info.tools, mine_info.memory) == (
        "compat_strict",
        True,
        False,
    )
    assert (theirs_info.prompt_mode, theirs_info.tools, theirs_info.memory) == (
        "compat_plus",
        False,
        True,
    )
    info = (await real.ask(mine, ann, "/info", "Character")).splitlines()
    assert {"mode = compat_strict", "tools = on", "memory = off"} <= set(info)
    other = (await real.ask(theirs, bea, "/info", "Character")).splitlines()
    assert {"mode = compat_plus", "tools = off", "memory = on"} <= set(other)
    # the model sees it: tools offered in my chat only
    await real.reply_to(mine, ann, "two")
    assert _offers_tools(llm.chat_requests[-1].body)
    await real.reply_to(theirs, bea, "two")
    assert not _offers_tools(llm.chat_requests[-1].body)

    owner, bob = tg.new_user("Olga"), tg.new_user("Bob")
    group = tg.group("Tavern", owner=owner, members=(bob,))
    await real.ask(group, owner, "/start", "Session ready")
    refused = await real.ask(group, bob, "/set mode native", "Only")
    assert refused == "Only group admins can change session settings here."
    assert (await real.svc.session_info(telegram_key(group))).prompt_mode == "compat_plus"
    assert await real.ask(group, owner, "/set mode native", "Set ") == (
        "Set mode = native (this chat only)."
    )
    assert (await real.svc.session_info(telegram_key(group))).prompt_mode == "native"
    assert (await real.svc.session_info(telegram_key(mine))).prompt_mode == "compat_strict"
    assert len(await real.svc.history(telegram_key(mine), MAIN_BRANCH)) == 2


async def test_session_defaults_with_tools_on_apply_to_new_sessions_only(
    real: RealHarness,
) -> None:
    """``[session] tools = true``: a chat opened after it offers the tools; a chat that
    existed before keeps its own setting."""
    tg, llm = real.tg, real.llm
    old, new = tg.new_user("Old"), tg.new_user("New")
    before, after = tg.private_chat(old), tg.private_chat(new)
    await real.reply_to(before, old, "hello")
    await real.restart(session_defaults=SessionDefaults(tools=True))

    llm.script(set_variable("mood", "happy"), FakeReply(text="She smiles."))
    reply = await real.reply_to(after, new, "Hi")
    assert reply.text == "She smiles." and _offers_tools(llm.chat_requests[-2].body)
    llm.script(set_variable("mood", "grim"), FakeReply(text="She frowns."))
    await tg.press(after, new, reply.message_id, button(reply, "🔄"))
    await tg.wait_until(lambda: counter(reply) == "2/2")
    assert "mood = grim" in await real.ask(after, new, "/vars", "Variables")
    await tg.press(after, new, reply.message_id, button(reply, "◀️"))
    await tg.wait_until(lambda: counter(reply) == "1/2")
    assert "mood = happy" in await real.ask(after, new, "/vars", "Variables")

    assert "tools = off" in (await real.ask(before, old, "/info", "Character")).splitlines()
    await real.reply_to(before, old, "again")
    assert not _offers_tools(llm.chat_requests[-1].body)
