"""🔄 ◀️ ▶️ under an earlier member's reply of the latest group turn (issue 17).

Mira answered, then Bob (the branch's latest floor): a press or a 🔄 reaction on Mira's message
asks the engine for her reply's floor. Whether it may change is the engine's rule (no user's
message after it, no branch forked after it...); :func:`earlier_reply` asks with a swipe that
moves nothing, so a refused reply is left exactly as it is and the routers answer as they did
for any older reply. An allowed one is regenerated or swiped in its own message, which keeps its
keyboard and its page counter; the latest reply and what the chat remembers of it are untouched.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from aiogram import Bot

from adapters.telegram.config import TelegramConfig
from adapters.telegram.context import Where
from adapters.telegram.keyboards import swipe_keyboard
from adapters.telegram.sender import Place, ReplyWriter
from engine.errors import EngineError
from engine.incidents import failure_line
from engine.turns.api import PlatformRef, ReplyView, RoleplayService

log = logging.getLogger("tavernbot.telegram.earlier")


async def earlier_reply(
    service: RoleplayService, where: Where, message_id: int
) -> ReplyView | None:
    """The page message ``message_id`` shows when it is a reply the engine lets change though
    it is not the latest (None: unknown, not a reply, or refused)."""
    ref = await service.resolve_message(where.key, str(message_id))
    if ref is None or ref.role != "assistant" or ref.page is None:
        return None
    try:
        # A swipe of 0 pages changes nothing but passes the engine's checks for the floor.
        return await service.swipe(where.key, where.branch, 0, floor=ref.floor)
    except EngineError as exc:
        log.info("floor %s of %s stays as shown: %s", ref.floor, where.key, exc)
        return None


def _writer(
    bot: Bot, where: Where, config: TelegramConfig, shown: ReplyView, ids: Sequence[int]
) -> ReplyWriter:
    place = Place(
        chat_id=where.place.chat_id, thread_id=where.place.thread_id, private=where.private
    )
    # Only a group's replies are earlier replies, and a group's replies carry their speaker.
    return ReplyWriter(bot, place, config, speaker=shown.character, existing=ids)


async def _finish(
    service: RoleplayService, where: Where, writer: ReplyWriter, view: ReplyView
) -> None:
    """Show ``view`` in the writer's messages with its keyboard, and link them to its page."""
    ids = await writer.finish(view.text, swipe_keyboard(where.branch, view.page, view.pages))
    ref = PlatformRef(branch=where.branch, floor=view.floor, page=view.page, role="assistant")
    for message_id in ids:
        await service.link_message(where.key, str(message_id), ref)


async def regenerate(
    service: RoleplayService,
    config: TelegramConfig,
    bot: Bot,
    where: Where,
    shown: ReplyView,
    message_id: int,
) -> ReplyView | None:
    """A new page of ``shown``'s floor streamed into its message; on failure the message
    shows the page it had again and the error goes in a message of its own (None)."""
    writer = _writer(bot, where, config, shown, [message_id])
    async with writer:
        try:
            view = await service.regenerate(
                where.key, where.branch, floor=shown.floor, on_text=writer.on_text
            )
        except EngineError as exc:
            line = failure_line(exc, "regenerating failed", logger=log)
            await _finish(service, where, writer, shown)
            await bot.send_message(
                where.place.chat_id,
                f"⚠️ {line}",
                message_thread_id=where.place.thread_id,
                parse_mode=None,
            )
            return None
        await _finish(service, where, writer, view)
    return view


async def swipe(
    service: RoleplayService,
    config: TelegramConfig,
    bot: Bot,
    where: Where,
    shown: ReplyView,
    step: int,
    message_id: int,
) -> ReplyView:
    """The page ``step`` away on ``shown``'s floor, in its message."""
    view = await service.swipe(where.key, where.branch, step, floor=shown.floor)
    await _finish(service, where, _writer(bot, where, config, view, [message_id]), view)
    return view
