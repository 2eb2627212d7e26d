"""Caches that stay true on Telegram (issue 19): a private chat's current branch, switched
through another service on the same PostgreSQL database, is where the chat's next message
plays (the adapter's state reads it through)."""

from __future__ import annotations

import pytest

from adapters.telegram.state import ChatState
from engine.timeline.values import MAIN_BRANCH
from engine.turns.api import SessionKey
from tests.test_scale.caches_support import line, two_services

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]

CHAT = SessionKey(platform="telegram", realm="user-7", key="chat-7")


async def test_a_branch_switched_elsewhere_is_where_the_next_message_plays(
    pg_url: str,
) -> None:
    async with two_services(pg_url) as (first, second):
        state = ChatState(first)
        await first.open_session(CHAT)
        await first.respond(CHAT, await state.current_branch(CHAT), [line("hello")])
        assert await state.current_branch(CHAT) == MAIN_BRANCH

        await second.fork(CHAT, MAIN_BRANCH, after_floor=1, name="side")
        await second.set_current_branch(CHAT, "side")
        branch = await state.current_branch(CHAT)
        assert branch == "side"
        view = await first.respond(CHAT, branch, [line("on the side")])
        assert (view.branch, view.floor) == ("side", 2)

        # Switched here: the other service sees it too, and the state keeps reading through.
        await state.switch_branch(CHAT, MAIN_BRANCH)
        assert await second.current_branch(CHAT) == MAIN_BRANCH
        await second.set_current_branch(CHAT, "side")
        assert await state.current_branch(CHAT) == "side"
