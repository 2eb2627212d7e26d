"""Playing turns on Telegram: respond, regenerate and swipe, and keeping the keyboard current.

Every reply ends with the swipe keyboard under its last message; the reply it replaces loses
its keyboard. Each message of a reply (and the user's message) is linked to its floor and page
through the service, so a later ``/branch`` reply or reaction finds the floor it points at.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from aiogram import Bot

from adapters.telegram.config import TelegramConfig
from adapters.telegram.context import Where
from adapters.telegram.keyboards import swipe_keyboard
from adapters.telegram.sender import Place, ReplyWriter, drop_keyboard
from adapters.telegram.state import ChatState, Shown
from engine.errors import EngineError
from engine.incidents import TURN_FAILED, failure_line
from engine.turns.api import PlatformRef, ReplyView, RoleplayService, UserLine

log = logging.getLogger("tavernbot.telegram.turns")


class Turns:
    """Runs turns for the routers (see the module docstring)."""

    def __init__(self, service: RoleplayService, state: ChatState, config: TelegramConfig) -> None:
        self.service = service
        self.state = state
        self.config = config
        self._service_links_inputs: bool | None = None

    def _speaker(self, where: Where) -> str | None:
        if where.private:
            return None
        known = where.info.character if where.info else None
        return known or self.state.characters.get(where.key)

    async def respond(self, bot: Bot, where: Where, lines: Sequence[UserLine]) -> ReplyView | None:
        """Record ``lines`` as a new floor and stream the reply; None when the turn failed."""
        writer = ReplyWriter(bot, where.place, self.config, speaker=self._speaker(where))
        async with writer:
            try:
                view = await self.service.respond(
                    where.key, where.branch, lines, on_text=writer.on_text
                )
            except EngineError as exc:
                await writer.fail(failure_line(exc, TURN_FAILED, logger=log))
                return None
            await self._finish(bot, where, writer, view)
        await self._link_inputs(where, lines, view.floor)
        return view

    async def _link_inputs(self, where: Where, lines: Sequence[UserLine], floor: int) -> None:
        """Map the user's messages to their floor, unless the service already did (it keeps
        ``UserLine.ref``; checked once, on the first turn, to save two writes per line)."""
        refs = [line.ref for line in lines if line.ref is not None]
        if not refs or self._service_links_inputs:
            return
        if self._service_links_inputs is None:
            found = await self.service.resolve_message(where.key, refs[0])
            self._service_links_inputs = found is not None and found.floor == floor
            if self._service_links_inputs:
                return
        ref = PlatformRef(branch=where.branch, floor=floor, page=None, role="user")
        for platform_ref in refs:
            await self.service.link_message(where.key, platform_ref, ref)

    async def regenerate(
        self, bot: Bot, where: Where, *, shown_at: Sequence[int] = ()
    ) -> ReplyView | None:
        """Add a page to the latest floor, streamed into the messages that show it."""
        existing = self._existing(where, shown_at)
        place = Place(
            chat_id=where.place.chat_id, thread_id=where.place.thread_id, private=where.private
        )
        writer = ReplyWriter(
            bot, place, self.config, speaker=self._speaker(where), existing=existing
        )
        async with writer:
            try:
                view = await self.service.regenerate(
                    where.key, where.branch, on_text=writer.on_text
                )
            except EngineError as exc:
                await writer.fail(failure_line(exc, "regenerating failed", logger=log))
                return None
            await self._finish(bot, where, writer, view)
        return view

    async def swipe(
        self, bot: Bot, where: Where, step: int, *, shown_at: Sequence[int] = ()
    ) -> ReplyView:
        """Show the page ``step`` away on the latest floor, in place."""
        view = await self.service.swipe(where.key, where.branch, step)
        await self.show(bot, where, view, shown_at=shown_at)
        return view

    async def show(
        self, bot: Bot, where: Where, view: ReplyView, *, shown_at: Sequence[int] = ()
    ) -> None:
        """Show ``view`` with the keyboard, editing the messages that show its floor if known."""
        place = Place(
            chat_id=where.place.chat_id, thread_id=where.place.thread_id, private=where.private
        )
        writer = ReplyWriter(
            bot,
            place,
            self.config,
            speaker=self._speaker(where),
            existing=self._existing(where, shown_at),
        )
        await self._finish(bot, where, writer, view)

    async def greet(self, bot: Bot, where: Where, user_name: str) -> ReplyView | None:
        """Open an empty branch with the character's greeting (its alternates as pages); None
        when there is nothing to greet with (the branch has floors, the card no greeting)."""
        try:
            view = await self.service.greet(where.key, where.branch, user_name=user_name)
        except EngineError as exc:
            log.warning("no greeting in %s: %s", where.key, exc)
            return None
        if view is not None:
            await self.show(bot, where, view)
        return view

    def _existing(self, where: Where, shown_at: Sequence[int]) -> list[int]:
        shown = self.state.shown(where.key, where.branch)
        if shown is not None and (not shown_at or shown_at[-1] in shown.message_ids):
            return list(shown.message_ids)
        return list(shown_at)

    async def _finish(self, bot: Bot, where: Where, writer: ReplyWriter, view: ReplyView) -> None:
        self.state.characters[where.key] = view.character
        if not where.private:
            writer.speaker = view.character
        markup = swipe_keyboard(where.branch, view.page, view.pages)
        ids = await writer.finish(view.text, markup)
        ref = PlatformRef(branch=where.branch, floor=view.floor, page=view.page, role="assistant")
        for message_id in ids:
            await self.service.link_message(where.key, str(message_id), ref)
        shown = Shown(message_ids=tuple(ids), floor=view.floor, page=view.page, pages=view.pages)
        previous = self.state.show(where.key, where.branch, shown)
        # The keyboard lives only under the newest reply of the chat's current view.
        if previous is not None and previous.message_ids and previous.message_ids[-1] not in ids:
            await drop_keyboard(bot, where.place.chat_id, previous.message_ids[-1])
