"""Reactions: 🔄 or 👎 on the latest reply of a branch regenerates it (on the error of a failed
latest floor, retries it), and so on an earlier member's reply of the latest group turn when the
engine allows it (:mod:`adapters.telegram.earlier`); on an older reply they do nothing.

Telegram delivers ``message_reaction`` updates only to bots that ask for them (aiogram asks
because this router handles them) and, in groups, only to admin bots.
"""

from __future__ import annotations

from aiogram import Bot, Router
from aiogram.types import MessageReactionUpdated, ReactionTypeEmoji

from adapters.telegram import earlier
from adapters.telegram.app import Frontend
from adapters.telegram.context import Where
from adapters.telegram.convert import session_key, thread_of_branch
from adapters.telegram.sender import Place

REGENERATE_EMOJI = frozenset({"🔄", "👎"})


def _emoji(reactions: list[object]) -> set[str]:
    return {r.emoji for r in reactions if isinstance(r, ReactionTypeEmoji)}


def build(frontend: Frontend) -> Router:
    """The router for reactions."""
    router = Router(name="telegram-reactions")

    @router.message_reaction()
    async def on_reaction(event: MessageReactionUpdated, bot: Bot) -> None:
        added = _emoji(list(event.new_reaction)) - _emoji(list(event.old_reaction))
        if not added & REGENERATE_EMOJI:
            return
        info = await frontend.resolver.session(event.chat, fresh=True)
        if info is None:
            return
        key = session_key(event.chat)
        ref = await frontend.service.resolve_message(key, str(event.message_id))
        if ref is None or ref.role != "assistant":
            return
        floors = {b.name: b.floors for b in info.branches}
        head = floors.get(ref.branch)
        private = event.chat.type == "private"
        place = Place(
            chat_id=event.chat.id, thread_id=thread_of_branch(ref.branch), private=private
        )
        where = Where(key=key, branch=ref.branch, place=place, private=private, info=info)
        if head is None or not await frontend.turns.shows_latest(key, ref, head):
            # Otherwise only the latest reply of a branch (or its failed floor) regenerates.
            service = frontend.service
            shown = await earlier.earlier_reply(service, where, event.message_id)
            if shown is not None:
                await earlier.regenerate(
                    service, frontend.config, bot, where, shown, event.message_id
                )
            return
        await frontend.turns.regenerate(bot, where, shown_at=[event.message_id])

    return router
