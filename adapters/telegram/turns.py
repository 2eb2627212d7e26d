"""Playing turns on Telegram: respond, regenerate and swipe, and keeping the keyboard current.

Every reply ends with the swipe keyboard under its last message; the reply it replaces loses
its keyboard. A group turn's replies (one per member who answers) each keep their own until the
next turn; the latest one swipes or regenerates here, an earlier one of the same turn through
:mod:`adapters.telegram.earlier` (when the engine allows it).
Each message of a reply (and the user's message) is linked to its floor and page through the
service, so a later ``/branch`` reply or reaction finds the floor it points at.

A failed turn is never a dead end: its error takes the place of the reply, and when the floor
was kept (failed, with the user's input) the error carries 🔄 and is linked to that floor, so
the button, a 🔄 reaction or ``/regen`` retries it as a new page of the same floor.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from aiogram import Bot

from adapters.telegram.config import TelegramConfig
from adapters.telegram.context import Where
from adapters.telegram.group_turn import TurnWriters
from adapters.telegram.keyboards import retry_keyboard, swipe_keyboard
from adapters.telegram.sender import Place, ReplyWriter, drop_keyboard
from adapters.telegram.state import ChatState, Shown
from engine.errors import EngineError
from engine.incidents import TURN_FAILED, failure_line
from engine.turns.api import PlatformRef, ReplyView, RoleplayService, SessionKey, UserLine

log = logging.getLogger("tavernbot.telegram.turns")


class Turns:
    """Runs turns for the routers (see the module docstring)."""

    def __init__(self, service: RoleplayService, state: ChatState, config: TelegramConfig) -> None:
        self.service = service
        self.state = state
        self.config = config
        self._service_links_inputs: bool | None = None

    def _prefixed(self, where: Where) -> bool:
        """Whether replies start with the speaker's name: always in Telegram groups (as
        before), and in private chats when the session plays a group of characters."""
        return not where.private or where.key in self.state.groups

    def _speaker(self, where: Where) -> str | None:
        """The name a reply starts with before the engine says whose it is: in a group, the
        character who spoke last (a regenerate or swipe is of the latest reply)."""
        if not self._prefixed(where):
            return None
        known = where.info.character if where.info else None
        last = self.state.characters.get(where.key)
        if where.key in self.state.groups:
            return last or known
        return known or last

    async def respond(self, bot: Bot, where: Where, lines: Sequence[UserLine]) -> ReplyView | None:
        """Record ``lines`` as a new floor and stream the reply (in a group session, each
        member's reply as its own message: :mod:`adapters.telegram.group_turn`); None when
        the turn failed. A group turn returns its last reply (or the unanswered floor)."""

        def open_writer(speaker: str | None) -> ReplyWriter:
            return ReplyWriter(bot, where.place, self.config, speaker=speaker)

        async def finish(writer: ReplyWriter, view: ReplyView, same_turn: bool) -> None:
            await self._finish(bot, where, writer, view, same_turn=same_turn)

        checked: list[bool] = []

        async def label(name: str) -> str | None:
            if not checked:  # once a turn: whether the session plays a group now
                checked.append(True)
                await self._note_group(where.key)
            return name if self._prefixed(where) else None

        turn = TurnWriters(open_writer, finish, label)
        turn.writer.speaker = self._speaker(where)
        async with turn:
            try:
                view = await self.service.respond(
                    where.key,
                    where.branch,
                    lines,
                    on_text=turn.on_text,
                    on_speaker=turn.on_speaker,
                    on_reply=turn.on_reply,
                )
            except EngineError as exc:
                line = failure_line(exc, TURN_FAILED, logger=log)
                kept = await self._kept_failed_floor(where, lines, after=turn.replies)
                # A later member's failure leaves the earlier members' replies as they are.
                await self._fail(
                    bot, where, turn.for_failure(), line, kept, same_turn=bool(turn.replies)
                )
                # The user's lines are on the turn's first floor.
                opened = turn.replies[0] if turn.replies else kept
                if opened is not None:
                    await self._link_inputs(where, lines, opened.floor)
                return None
            if not turn.handled:
                await self._finish(bot, where, turn.writer, view)
        first = turn.replies[0] if turn.replies else view
        await self._link_inputs(where, lines, first.floor)
        return view

    async def _note_group(self, key: SessionKey) -> None:
        """Read whether the session plays a group (another front end may have changed it)."""
        try:
            self.state.note_group(await self.service.session_info(key))
        except EngineError as exc:
            log.warning("could not read the members of %s: %s", key, exc)

    async def speak(self, bot: Bot, where: Where, name: str) -> ReplyView | None:
        """The member ``name`` (as the session names it) answers now, streamed as its own
        reply with the keyboard; None when that failed (the error is shown instead)."""
        speaker = name if self._prefixed(where) else None
        writer = ReplyWriter(bot, where.place, self.config, speaker=speaker)
        async with writer:
            try:
                view = await self.service.speak(
                    where.key, where.branch, name, on_text=writer.on_text
                )
            except EngineError as exc:
                line = failure_line(exc, f"{name} could not answer", logger=log)
                latest = await self.latest(where.key, where.branch)
                failed = latest if latest is not None and latest.failed else None
                await self._fail(bot, where, writer, line, failed)
                return None
            await self._finish(bot, where, writer, view)
        return view

    async def latest(self, key: SessionKey, branch: str) -> ReplyView | None:
        """The branch's latest floor as history shows it, failed or not (None: no floor, or
        unreadable)."""
        try:
            history = await self.service.history(key, branch, limit=1)
        except EngineError as exc:
            log.warning("could not read the latest floor of %s: %s", key, exc)
            return None
        return history[-1] if history else None

    async def shows_latest(self, key: SessionKey, ref: PlatformRef, head: int | None) -> bool:
        """Whether a reply message linked as ``ref`` shows its branch's latest floor, whose
        newest committed floor is ``head``: a reply at or after it, or the error of a failed
        floor (which is after every committed one) that is still the branch's latest."""
        if ref.page is not None or head is None or ref.floor < head:
            return head is None or ref.floor >= head
        latest = await self.latest(key, ref.branch)
        return latest is not None and latest.failed and latest.floor == ref.floor

    async def _kept_failed_floor(
        self, where: Where, lines: Sequence[UserLine], *, after: Sequence[ReplyView] = ()
    ) -> ReplyView | None:
        """The failed floor a failed turn left with ``lines`` (None when it left none, e.g. an
        input refused before any floor was opened): the branch's latest floor if it failed
        and, when the service linked the input, is the floor the input is on. In a group
        turn whose replies ``after`` were shown, a later member's failed floor (it holds no
        input) is the one after them."""
        latest = await self.latest(where.key, where.branch)
        if latest is None or not latest.failed:
            return None
        if after:
            return latest if latest.floor > after[-1].floor else None
        refs = [line.ref for line in lines if line.ref is not None]
        if refs:
            found = await self.service.resolve_message(where.key, refs[-1])
            if found is not None and found.floor != latest.floor:
                return None  # an older failed floor; this input was refused before it stored
        return latest

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
                line = failure_line(exc, "regenerating failed", logger=log)
                latest = await self.latest(where.key, where.branch)
                await self._fail(bot, where, writer, line, latest)
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

    async def _finish(
        self,
        bot: Bot,
        where: Where,
        writer: ReplyWriter,
        view: ReplyView,
        *,
        same_turn: bool = False,
    ) -> None:
        self.state.characters[where.key] = view.character
        if self._prefixed(where):
            writer.speaker = view.character
        markup = swipe_keyboard(where.branch, view.page, view.pages)
        ids = await writer.finish(view.text, markup)
        await self._shows(bot, where, ids, view, page=view.page, same_turn=same_turn)

    async def tell_failed(self, bot: Bot, where: Where, floor: int, line: str) -> None:
        """Show ``line`` (why ``floor`` got no reply) in a new message, as a failed turn shows
        its error: with 🔄 and linked to the floor while it is the branch's latest and failed
        (recovery's notice of an interrupted reply)."""
        history = await self.service.history(where.key, where.branch, limit=1)
        latest = history[-1] if history else None
        if latest is not None and not (latest.failed and latest.floor == floor):
            latest = None  # a newer floor or a retry already answered: the line alone
        await self._fail(bot, where, ReplyWriter(bot, where.place, self.config), line, latest)

    async def _fail(
        self,
        bot: Bot,
        where: Where,
        writer: ReplyWriter,
        line: str,
        latest: ReplyView | None,
        *,
        same_turn: bool = False,
    ) -> None:
        """Show the error ``line`` where the reply would have been. With the branch's
        ``latest`` floor it gets that floor's keyboard (🔄 alone when the floor failed, the
        swipe row when a retry of a committed floor failed) and stands for the floor; in a
        group turn that already replied (``same_turn``) the earlier replies keep theirs."""
        if latest is None:
            await writer.fail(line)
            return
        if latest.failed:
            ids = await writer.fail(line, retry_keyboard(where.branch))
            await self._shows(bot, where, ids, latest, page=None, same_turn=same_turn)
        else:
            markup = swipe_keyboard(where.branch, latest.page, latest.pages)
            ids = await writer.fail(line, markup)
            await self._shows(bot, where, ids, latest, page=latest.page)

    async def _shows(
        self,
        bot: Bot,
        where: Where,
        ids: Sequence[int],
        view: ReplyView,
        *,
        page: int | None,
        same_turn: bool = False,
    ) -> None:
        """Record that messages ``ids`` (the last with the keyboard) show ``view``'s floor,
        at ``page`` (None: the floor failed and has no page), and move the keyboard there.
        A later reply of the same group turn (``same_turn``) leaves the earlier replies'
        keyboards in place; the next turn removes them all."""
        ref = PlatformRef(branch=where.branch, floor=view.floor, page=page, role="assistant")
        for message_id in ids:
            await self.service.link_message(where.key, str(message_id), ref)
        previous = self.state.shown(where.key, where.branch)
        kept: tuple[int, ...] = ()
        stale: tuple[int, ...] = ()
        if previous is not None:
            last = previous.message_ids[-1:]
            if last and last[0] in ids:  # the same reply shown again (a swipe, a regenerate)
                kept = previous.kept
            elif same_turn:
                kept = (*previous.kept, *last)
            else:
                stale = (*previous.kept, *last)
        shown = Shown(
            message_ids=tuple(ids), floor=view.floor, page=page or 0, pages=view.pages, kept=kept
        )
        self.state.show(where.key, where.branch, shown)
        # Keyboards live only under the newest reply (or the newest group turn's replies).
        for message_id in stale:
            if message_id not in ids:
                await drop_keyboard(bot, where.place.chat_id, message_id)
