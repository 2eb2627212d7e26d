"""Inline buttons: ◀️ ▶️ swipe, 🔄 regenerates, the page counter, and branch switching.

▶️ on the last page regenerates, as in SillyTavern. The page counter of the pressed keyboard
tells which page the message shows, so buttons keep working after a restart. The branch's
latest reply swipes and regenerates, and so does an earlier member's reply of the latest group
turn when the engine allows it (:mod:`adapters.telegram.earlier`), in its own message. A press
under an older reply answers with an alert; a keyboard left under an older reply (the adapter
forgets where it put keyboards when it restarts) is removed when pressed, while the earlier
replies of the latest group turn keep theirs.
"""

from __future__ import annotations

from typing import Final

from aiogram import Bot, Router
from aiogram.types import CallbackQuery, InaccessibleMessage, Message

from adapters.telegram import earlier
from adapters.telegram.app import Frontend
from adapters.telegram.context import Where
from adapters.telegram.convert import session_key
from adapters.telegram.keyboards import (
    COUNT,
    CURRENT,
    NEXT,
    PREV,
    REGEN,
    BranchData,
    SwipeData,
    retry_keyboard,
)
from adapters.telegram.sender import Place, drop_keyboard
from engine.errors import EngineError
from engine.turns.api import ReplyView

OLDER_REPLY: Final = "Only the latest reply can be swiped or regenerated."
"""The alert a swipe or 🔄 button under an older reply answers with."""


def _page_counter(message: Message) -> tuple[int, int] | None:
    """The ``n/m`` shown on the message's keyboard, if any."""
    markup = message.reply_markup
    if markup is None:
        return None
    for row in markup.inline_keyboard:
        for button in row:
            left, _, right = button.text.partition("/")
            if left.isdigit() and right.isdigit():
                return int(left), int(right)
    return None


def build(frontend: Frontend) -> Router:
    """The router for inline keyboard presses."""
    router = Router(name="telegram-callbacks")

    async def where_of(message: Message, branch: str) -> Where | None:
        info = await frontend.resolver.session(message.chat, fresh=True)
        if info is None:
            return None
        thread = message.message_thread_id if message.is_topic_message else None
        place = Place(
            chat_id=message.chat.id, thread_id=thread, private=message.chat.type == "private"
        )
        return Where(
            key=session_key(message.chat),
            branch=branch,
            place=place,
            private=place.private,
            info=info,
        )

    async def is_latest(where: Where, message_id: int) -> bool:
        """Whether the message shows the branch's latest floor (unknown messages pass)."""
        ref = await frontend.service.resolve_message(where.key, str(message_id))
        heads = {b.name: b.floors for b in where.info.branches} if where.info else {}
        return ref is None or await frontend.turns.shows_latest(
            where.key, ref, heads.get(where.branch)
        )

    async def on_earlier(
        bot: Bot, where: Where, shown: ReplyView, message_id: int, data: SwipeData, at_last: bool
    ) -> None:
        """A press under an earlier member's reply the engine lets change: only it changes."""
        service, config = frontend.service, frontend.config
        try:
            if data.action == REGEN or (data.action == NEXT and at_last):
                await earlier.regenerate(service, config, bot, where, shown, message_id)
            elif data.action in (PREV, NEXT):
                step = -1 if data.action == PREV else 1
                await earlier.swipe(service, config, bot, where, shown, step, message_id)
        except EngineError as exc:
            await bot.send_message(
                where.place.chat_id,
                f"⚠️ {exc}",
                message_thread_id=where.place.thread_id,
                parse_mode=None,
            )

    @router.callback_query(SwipeData.filter())
    async def on_swipe(query: CallbackQuery, callback_data: SwipeData, bot: Bot) -> None:
        message = query.message
        if message is None or isinstance(message, InaccessibleMessage):
            await query.answer("That message is too old.", show_alert=True)
            return
        branch = callback_data.branch
        if branch == CURRENT and isinstance(message, Message):
            branch = (await frontend.resolver.where(message, reply=False)).branch
        where = await where_of(message, branch)
        if where is None:
            await query.answer("This chat has no session.", show_alert=True)
            return
        counter = _page_counter(message)
        if callback_data.action == COUNT:
            shown = f"Page {counter[0]} of {counter[1]}." if counter else "One page."
            await query.answer(shown)
            return
        at_last = counter is not None and counter[0] >= counter[1]
        if not await is_latest(where, message.message_id):
            page = await earlier.earlier_reply(frontend.service, where, message.message_id)
            if page is not None:  # an earlier reply of the latest group turn (issue 17)
                await query.answer()
                await on_earlier(bot, where, page, message.message_id, callback_data, at_last)
                return
            # Only the branch's latest floor swipes and regenerates. An earlier reply of the
            # latest group turn keeps its keyboard (its page counter); one left under an
            # older reply (after a restart the adapter no longer knows where it was) goes.
            await query.answer(OLDER_REPLY, show_alert=True)
            latest = frontend.state.shown(where.key, where.branch)
            if latest is None or message.message_id not in latest.kept:
                await drop_keyboard(bot, message.chat.id, message.message_id)
            return
        await query.answer()
        try:
            if callback_data.action == REGEN or (callback_data.action == NEXT and at_last):
                await frontend.turns.regenerate(bot, where, shown_at=[message.message_id])
            elif callback_data.action in (PREV, NEXT):
                step = -1 if callback_data.action == PREV else 1
                await frontend.turns.swipe(bot, where, step, shown_at=[message.message_id])
        except EngineError as exc:
            await bot.send_message(
                message.chat.id,
                f"⚠️ {exc}",
                message_thread_id=where.place.thread_id,
                parse_mode=None,
            )

    @router.callback_query(BranchData.filter())
    async def on_branch(query: CallbackQuery, callback_data: BranchData, bot: Bot) -> None:
        message = query.message
        if message is None or isinstance(message, InaccessibleMessage):
            await query.answer("That message is too old.", show_alert=True)
            return
        where = await where_of(message, callback_data.branch)
        if where is None or not where.private:
            await query.answer("Branches switch in private chats only.", show_alert=True)
            return
        await frontend.state.switch_branch(where.key, callback_data.branch)
        await query.answer(f"Now on branch {callback_data.branch}.")
        history = await frontend.service.history(where.key, callback_data.branch, limit=1)
        if history and history[-1].failed:
            await bot.send_message(
                message.chat.id,
                f"Branch {callback_data.branch}: the message of floor {history[-1].floor} got "
                "no reply (it failed); 🔄 or /regen retries it.",
                parse_mode=None,
                reply_markup=retry_keyboard(callback_data.branch),
            )
        elif history:
            await frontend.turns.show(bot, where, history[-1])
        else:
            await bot.send_message(
                message.chat.id,
                f"Branch {callback_data.branch} is empty: write to begin it.",
                parse_mode=None,
            )

    return router
