"""Plain text messages become turns; a new forum topic forks its branch.

The messages collected while the previous turn ran (see :mod:`adapters.telegram.inbox`) are
played together as one floor by the first of their handlers; the others find nothing to do.
"""

from __future__ import annotations

from aiogram import Bot, F, Router
from aiogram.types import Message

from adapters.telegram.app import Frontend
from adapters.telegram.convert import session_key, topic_branch, user_line


def build(frontend: Frontend) -> Router:
    """The router for role-play messages."""
    router = Router(name="telegram-messages")

    @router.message(F.forum_topic_created)
    async def topic_created(message: Message) -> None:
        info = await frontend.resolver.session(message.chat)
        branch = topic_branch(message)
        if info is not None and branch is not None:
            await frontend.resolver.ensure_branch(session_key(message.chat), branch, info)

    @router.message(F.text)
    async def on_text(message: Message, bot: Bot) -> None:
        if message.from_user is None or message.from_user.is_bot:
            return
        if message.text and message.text.startswith("/"):
            if message.chat.type == "private":
                await message.answer("Unknown command. Send /start to see what I can do.")
            return
        batch = frontend.state.inbox.take(message)
        if not batch:
            return  # an earlier handler played this message with the ones before it
        where = await frontend.resolver.where(batch[-1])
        if where.info is None:
            return  # a group nobody bound: the bot stays quiet
        lines = [line for line in map(user_line, batch) if line is not None]
        if lines:
            await frontend.turns.respond(bot, where, lines)

    return router
