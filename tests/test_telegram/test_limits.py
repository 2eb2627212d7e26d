"""Named limits and pure helpers: splitting, HTML, retries, caches, keyboards, listings."""

from __future__ import annotations

from dataclasses import replace

import pytest
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import TelegramAPIServer
from aiogram.exceptions import TelegramRetryAfter, TelegramServerError

from adapters.telegram import config as limits
from adapters.telegram import state as state_module
from adapters.telegram.formatting import render_parts, split_text, to_html, utf16_len
from adapters.telegram.keyboards import (
    BRANCH_IN_DATA_MAX,
    BRANCHES_SHOWN,
    branches_keyboard,
    swipe_keyboard,
)
from adapters.telegram.retry import RetryMiddleware
from adapters.telegram.state import ChatState
from engine.turns.api import BranchInfo
from tests.fakes.roleplay import FakeRoleplayService
from tests.fakes.telegram import FakeTelegramServer
from tests.fakes.telegram.html_check import visible_text
from tests.test_telegram.conftest import Harness


@pytest.mark.parametrize(
    ("text", "limit", "parts"),
    [
        ("aaaa bbbb\n\ncccc dddd", 14, ["aaaa bbbb", "cccc dddd"]),  # paragraph
        ("aaaa bbbb\ncccc dddd", 14, ["aaaa bbbb", "cccc dddd"]),  # line
        ("Hi there. And more text", 14, ["Hi there.", "And more text"]),  # sentence
        ("alpha beta gamma delta", 12, ["alpha beta", "gamma delta"]),  # word
        ("abcdefghij", 4, ["abcd", "efgh", "ij"]),  # hard cut
        ("short", 4096, ["short"]),
    ],
)
def test_split_prefers_natural_boundaries(text: str, limit: int, parts: list[str]) -> None:
    assert split_text(text, limit) == parts


def test_split_never_breaks_a_surrogate_pair_and_respects_the_limit() -> None:
    parts = split_text("a" + "😀" * 10, 4)
    assert all(utf16_len(p) <= 4 for p in parts)
    assert "".join(parts) == "a" + "😀" * 10


def test_message_limit_is_telegrams() -> None:
    assert limits.MESSAGE_LIMIT_UTF16 == 4096
    assert [utf16_len(p) for p in split_text("x" * 4097)] == [4096, 1]


def test_html_is_escaped_and_markup_balanced_in_every_part() -> None:
    text = "*She smiles* & says <hi>. " * 300 + "**the end*"
    parts = render_parts(text, speaker="Mira <3")
    assert parts[0].startswith("<b>Mira &lt;3</b>\n")
    for part in parts:
        assert utf16_len(visible_text(part)) <= limits.MESSAGE_LIMIT_UTF16
    assert to_html("a < b & c") == "a &lt; b &amp; c"
    assert to_html("*wave* **bold**") == "<i>wave</i> <b>bold</b>"
    assert render_parts("   ") == ["…"]


async def test_retry_limits() -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async with FakeTelegramServer(max_lifetime_s=30) as srv:
        session = AiohttpSession(api=TelegramAPIServer.from_base(srv.base_url))
        session.middleware(RetryMiddleware(sleep=sleep))
        bot = Bot(srv.token, session=session)
        alice = srv.new_user("Alice")
        chat = srv.private_chat(alice)
        srv.fail_next("sendMessage", retry_after=1, times=limits.MAX_RETRY_AFTER_ATTEMPTS + 1)
        with pytest.raises(TelegramRetryAfter):
            await bot.send_message(chat["id"], "x")
        assert slept == [1.0] * limits.MAX_RETRY_AFTER_ATTEMPTS
        slept.clear()
        srv.fail_next("sendMessage", retry_after=int(limits.MAX_RETRY_AFTER_S) + 1)
        with pytest.raises(TelegramRetryAfter):
            await bot.send_message(chat["id"], "x")
        assert slept == []
        srv.fail_next(
            "sendMessage", status=500, description="boom", times=limits.NETWORK_RETRIES + 1
        )
        with pytest.raises(TelegramServerError):
            await bot.send_message(chat["id"], "x")
        assert slept == [limits.NETWORK_BACKOFF_S * 2**n for n in range(limits.NETWORK_RETRIES)]
        await session.close()


def test_seen_updates_are_bounded() -> None:
    state = ChatState(FakeRoleplayService())
    assert state.first_sight(1) and not state.first_sight(1)
    for n in range(2, limits.SEEN_UPDATES + 2):
        state.first_sight(n)
    assert state.first_sight(1)  # forgotten after SEEN_UPDATES newer ones


def test_admin_cache_expires(monkeypatch) -> None:
    state = ChatState(FakeRoleplayService())
    now = [1000.0]
    monkeypatch.setattr(state_module.time, "monotonic", lambda: now[0])
    state.remember_admin(-1, 7, True)
    assert state.cached_admin(-1, 7) is True
    now[0] += limits.ADMIN_CACHE_S + 1
    assert state.cached_admin(-1, 7) is None


def test_keyboard_limits() -> None:
    row = swipe_keyboard("main", 2, 5).inline_keyboard[0]
    assert [b.text for b in row] == ["◀️", "2/5", "▶️", "🔄"]
    assert all(len(b.callback_data.encode()) <= limits.CALLBACK_DATA_LIMIT for b in row)
    long_name = "x" * (BRANCH_IN_DATA_MAX + 1)
    assert swipe_keyboard(long_name, 1, 1).inline_keyboard[0][0].callback_data == "sw:prev:"
    many = [BranchInfo(name=f"b{n}", parent="main", fork_floor=1, floors=2) for n in range(30)]
    many.insert(0, BranchInfo(name=long_name, parent="main", fork_floor=1, floors=2))
    rows = branches_keyboard(many, "b0").inline_keyboard
    assert len(rows) == BRANCHES_SHOWN and rows[0][0].text.startswith("✅ b0")


async def test_vars_listing_is_capped_and_long_values_cut(harness: Harness) -> None:
    await harness.start()
    srv, service = harness.server, harness.service
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    await srv.send_text(chat, alice, "/start")
    await harness.wait_text(chat["id"], lambda t: t.startswith("Session ready"))
    key = next(iter(service.sessions))
    extra = 5
    for n in range(limits.VARS_SHOWN + extra):
        service.sessions[key].chat_vars[f"v{n:03d}"] = n
    service.sessions[key].chat_vars["long"] = "y" * (limits.VALUE_SHOWN_CHARS + 50)
    await srv.send_text(chat, alice, "/vars")
    listing = await harness.wait_text(chat["id"], lambda t: t.startswith("Variables"))
    lines = listing.text.splitlines()
    assert len(lines) == 1 + limits.VARS_SHOWN + 1
    assert lines[-1] == f"… and {extra + 1} more"
    assert lines[1] == "long = " + "y" * limits.VALUE_SHOWN_CHARS + "…"


async def test_dryrun_cuts_long_messages(harness: Harness) -> None:
    from adapters.telegram.routers.commands import DRYRUN_PREVIEW_CHARS

    await harness.start()
    srv = harness.server
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    await srv.send_text(chat, alice, "/dryrun " + "z" * (DRYRUN_PREVIEW_CHARS + 10))
    dry = await harness.wait_text(chat["id"], lambda t: t.startswith("Prompt"))
    assert dry.text.splitlines()[1] == "[user] " + "z" * DRYRUN_PREVIEW_CHARS + "…"


async def test_group_edits_are_throttled_to_the_latest_text(harness: Harness) -> None:
    words = [f"w{n}" for n in range(40)]
    harness.service.reply_for = lambda character, lines, page: " ".join(words)
    import tests.fakes.roleplay as roleplay

    await harness.start(edit_interval_group_s=0.2)
    srv = harness.server
    owner = srv.new_user("Olga")
    group = srv.group("G", owner=owner)
    await srv.send_text(group, owner, "/start")
    await harness.wait_text(group["id"], lambda t: t.startswith("Session ready"))
    original = roleplay.CHUNKS
    roleplay.CHUNKS = len(words)
    try:
        await srv.send_text(group, owner, "go")
        reply = await harness.wait_text(group["id"], lambda t: t.endswith("w39"))
        await srv.wait_until(lambda: reply.reply_markup is not None)
    finally:
        roleplay.CHUNKS = original
    # One message, far fewer edits than streamed chunks, and the final text complete.
    assert reply.edits < len(words) // 2
    assert reply.text == "Seraphina\n" + " ".join(words)


def test_config_from_the_settings_section() -> None:
    from bot.config import TelegramSettings
    from bot.platforms import telegram_config

    section = TelegramSettings(
        token="42:SECRET", api_base="http://127.0.0.1:9", allowed_users=[5, 6], mode="webhook"
    )
    built = replace(telegram_config(section), webhook_port=0)
    assert built.token == "42:SECRET" and built.api_base == "http://127.0.0.1:9"
    assert built.allowed_users == frozenset({5, 6}) and built.mode == "webhook"
    assert built.webhook_port == 0
    with pytest.raises(ValueError, match="token is not set"):
        telegram_config(TelegramSettings())


async def test_drafts_refused_by_the_server_fall_back_to_edits(harness: Harness) -> None:
    await harness.start()
    srv = harness.server
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    srv.fail_next("sendMessageDraft", status=404, description="Not Found", times=1)
    await srv.send_text(chat, alice, "no drafts here")
    reply = await harness.wait_text(chat["id"], lambda t: t.endswith("no drafts here"))
    await srv.wait_until(lambda: reply.reply_markup is not None)
    assert len(harness.texts(chat["id"])) == 1


async def test_memory_lists_at_most_memory_shown(harness: Harness) -> None:
    from adapters.telegram.routers.commands import MEMORY_SHOWN
    from engine.turns.api import MemoryView

    asked: list[tuple[str | None, int]] = []

    async def memories(key: object, branch: str, *, query: str | None = None, limit: int = 0):
        asked.append((query, limit))
        return [
            MemoryView(id=f"m{n}", kind="fact", text=f"fact {n}", scope="chat", importance=0.5)
            for n in range(limit)
        ]

    harness.service.memories = memories  # type: ignore[attr-defined]
    await harness.start()
    srv = harness.server
    alice = srv.new_user("Alice")
    chat = srv.private_chat(alice)
    await srv.send_text(chat, alice, "/memory")
    listing = await harness.wait_text(chat["id"], lambda t: t.startswith("Memories"))
    assert asked == [(None, MEMORY_SHOWN)]
    lines = listing.text.splitlines()
    assert len(lines) == 1 + MEMORY_SHOWN
    assert lines[1] == "• [fact, chat, 0.5] fact 0"
