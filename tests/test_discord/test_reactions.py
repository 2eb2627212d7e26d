"""🔄 regenerates the latest reply, ◀️ ▶️ switch its page; only its speakers and moderators."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.turns.api import OnText, ReplyView, SessionKey, UserLine
from tests.fakes.discord import FakeDiscord
from tests.test_discord.conftest import PacedService, Starter, World, bind


class PageWritingService(PacedService):
    """Each page writes the variable ``take`` (as a macro in the reply would)."""

    def _write_take(self, key: SessionKey, branch: str) -> None:
        session = self.sessions[key]
        floor = self._lineage(session, session.branches[branch])[-1]
        floor.page_vars[floor.active]["take"] = floor.active + 1

    async def respond(
        self,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
        **group: Any,
    ) -> ReplyView:
        view = await super().respond(key, branch, lines, on_text=on_text, **group)
        self._write_take(key, branch)
        return view

    async def regenerate(
        self,
        key: SessionKey,
        branch: str,
        *,
        floor: int | None = None,
        on_text: OnText | None = None,
    ) -> ReplyView:
        view = await super().regenerate(key, branch, floor=floor, on_text=on_text)
        self._write_take(key, branch)
        return view


def _reply(fake: FakeDiscord, world: World) -> dict:
    return [m for m in fake.sent_in(world.rp) if "webhook_id" in m][-1]


async def _vars(fake: FakeDiscord, world: World) -> str:
    return (await fake.slash(world.rp, world.alice, "vars list")).text


async def test_regenerate_then_swipe_change_reply_text_and_variables(
    fake: FakeDiscord, world: World, start_bot: Starter
) -> None:
    service = PageWritingService()
    await start_bot(service)
    await bind(world)
    await fake.say(world.rp, world.alice, "a riddle please")
    await fake.wait_for(lambda: service.respond_calls(), what="respond")
    await fake.wait_idle(quiet=0.2)
    reply = _reply(fake, world)
    assert "`take` = 1" in await _vars(fake, world)

    await fake.react(reply, world.alice, "🔄")
    await fake.wait_for(lambda: "‹ 2/2 ›" in _reply(fake, world)["content"], what="page 2")
    content = _reply(fake, world)["content"]
    assert "(take 2)" in content and content.endswith("-# ‹ 2/2 ›")
    assert _reply(fake, world)["id"] == reply["id"], "the same message is edited"
    assert "`take` = 2" in await _vars(fake, world)

    await fake.react(reply, world.alice, "◀️")
    await fake.wait_for(lambda: "‹ 1/2 ›" in _reply(fake, world)["content"], what="page 1")
    assert "(take 2)" not in _reply(fake, world)["content"]
    assert "`take` = 1" in await _vars(fake, world)

    await fake.react(reply, world.alice, "▶️")
    await fake.wait_for(lambda: "‹ 2/2 ›" in _reply(fake, world)["content"], what="page 2 again")
    assert "`take` = 2" in await _vars(fake, world)
    # The bot tidies the reactions it handled.
    removed = [r for r in fake.reactions if r[3] == "remove" and r[2] == world.alice.id]
    assert len(removed) == 3


async def test_reaction_without_the_right_is_ignored_and_removed(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    await fake.say(world.rp, world.alice, "hello")
    await fake.wait_for(lambda: service.respond_calls(), what="respond")
    await fake.wait_idle(quiet=0.2)
    reply = _reply(fake, world)
    before = reply["content"]
    await fake.react(reply, world.bob, "🔄")
    await fake.wait_for(
        lambda: [r for r in fake.reactions if r[2] == world.bob.id and r[3] == "remove"],
        what="bob's reaction removed",
    )
    await fake.wait_idle(quiet=0.2)
    assert [c for c in service.calls if c[0] == "regenerate"] == []
    assert _reply(fake, world)["content"] == before
    # A moderator (Manage Messages) may.
    await fake.react(reply, world.mod, "🔄")
    await fake.wait_for(lambda: "‹ 2/2 ›" in _reply(fake, world)["content"], what="mod regen")


async def test_only_the_latest_reply_reacts(
    fake: FakeDiscord, world: World, start_bot: Starter, service: PacedService
) -> None:
    await start_bot()
    await bind(world)
    await fake.say(world.rp, world.alice, "first")
    await fake.wait_for(lambda: len(service.respond_calls()) == 1, what="first")
    await fake.wait_idle(quiet=0.2)
    first = _reply(fake, world)
    await fake.say(world.rp, world.alice, "second")
    await fake.wait_for(lambda: len(service.respond_calls()) == 2, what="second")
    await fake.wait_idle(quiet=0.2)
    await fake.react(first, world.alice, "🔄")
    await fake.react(first, world.alice, "👍")
    await fake.wait_idle(quiet=0.3)
    assert [c for c in service.calls if c[0] == "regenerate"] == []
