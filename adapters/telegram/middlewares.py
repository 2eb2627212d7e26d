"""Dispatcher middlewares: per-chat ordering, redelivery guard and the private-chat allow-list.

:class:`OrderMiddleware` wraps every update: it drops an update id seen before, holds the chat's
lock while the update is handled (so one chat's updates run one at a time, in delivery order),
collects role-play text into the chat's inbox before waiting (see :mod:`.inbox`),
remembers the highest update id handled and counts updates in flight so shutdown can drain them.
With several processes (``shared``), an update another process took is dropped too, and a
chat's update waits for the earlier ones other processes handle (see :mod:`.updates_seen`).
:class:`AllowListMiddleware` refuses private chats of users not in the configured list.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeGuard

from aiogram import BaseMiddleware
from aiogram.types import CallbackQuery, Chat, Message, TelegramObject, Update, User

from adapters.telegram.state import ChatState
from adapters.telegram.updates_seen import SharedUpdates

log = logging.getLogger("tavernbot.telegram.middlewares")
Handler = Callable[[TelegramObject, dict[str, Any]], Awaitable[Any]]


def chat_of(update: Update) -> Chat | None:
    """The chat an update belongs to (None for updates outside chats)."""
    if update.message is not None:
        return update.message.chat
    if update.edited_message is not None:
        return update.edited_message.chat
    if update.callback_query is not None and update.callback_query.message is not None:
        return update.callback_query.message.chat
    if update.message_reaction is not None:
        return update.message_reaction.chat
    return None


def _payload(update: Update) -> str:
    """The update as JSON, as Telegram sends it (kept with its claim for a take-over)."""
    return update.model_dump_json(exclude_none=True, by_alias=True)


class OrderMiddleware(BaseMiddleware):
    """Serialises each chat's updates and tracks what is in flight (see the module docstring)."""

    def __init__(
        self,
        state: ChatState,
        allowed: frozenset[int] = frozenset(),
        *,
        batch: bool = True,
        shared: SharedUpdates | None = None,
    ) -> None:
        self.state = state
        self.shared = shared
        self.allowed = allowed
        self.batch = batch
        self.last_update_id: int | None = None
        self.in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        if not isinstance(event, Update):
            return await handler(event, data)
        chat = chat_of(event)
        # Another process's update is not remembered as seen here: if that process dies,
        # this one may take the update over and handle it (see .orphans).
        if self.shared is not None and not await self.shared.admit(
            event.update_id, chat.id if chat is not None else None, lambda: _payload(event)
        ):
            log.info("update %s was taken by another process; dropped", event.update_id)
            return None
        if not self.state.first_sight(event.update_id):
            log.info("update %s delivered again; dropped", event.update_id)
            return None
        if self.last_update_id is None or event.update_id > self.last_update_id:
            self.last_update_id = event.update_id
        self.in_flight += 1
        self._idle.clear()
        try:
            if chat is None:
                return await self._finishing(handler, event, data)
            # Collected before waiting for the chat, so that lines arriving during a turn
            # are all in the next floor.
            if self._is_line(event.message):
                self.state.inbox.collect(event.message)
            if not self.batch or not self._is_line(event.message):
                self.state.inbox.seal(chat.id)
            async with self.state.ordered(chat.id):
                if self.shared is not None:
                    await self.shared.wait_turn(event.update_id, chat.id)
                return await self._finishing(handler, event, data)
        finally:
            self.in_flight -= 1
            if self.in_flight == 0:
                self._idle.set()

    async def _finishing(self, handler: Handler, event: Update, data: dict[str, Any]) -> Any:
        """Handle the update, then tell the other processes it is done."""
        try:
            return await handler(event, data)
        finally:
            if self.shared is not None:
                try:
                    await self.shared.finish(event.update_id)
                except Exception:  # its claim stops blocking the chat when this lease ends
                    log.exception("could not mark update %s handled", event.update_id)

    def _is_line(self, message: Message | None) -> TypeGuard[Message]:
        """Whether the message is role-play text the messages router will play."""
        if message is None or not message.text or message.text.startswith("/"):
            return False
        user = message.from_user
        if user is None or user.is_bot:
            return False
        private = message.chat.type == "private"
        return not (private and self.allowed and user.id not in self.allowed)

    async def drained(self) -> None:
        """Wait until no update is being handled."""
        await self._idle.wait()


class AllowListMiddleware(BaseMiddleware):
    """Refuse private chats with users outside ``allowed`` (an empty set allows everyone)."""

    def __init__(self, allowed: frozenset[int]) -> None:
        self.allowed = allowed

    async def __call__(self, handler: Handler, event: TelegramObject, data: dict[str, Any]) -> Any:
        user: User | None = data.get("event_from_user")
        chat: Chat | None = data.get("event_chat")
        if (
            self.allowed
            and chat is not None
            and chat.type == "private"
            and (user is None or user.id not in self.allowed)
        ):
            if isinstance(event, Message):
                await event.answer("Sorry, this bot only plays with the people it was set up for.")
            elif isinstance(event, CallbackQuery):
                await event.answer("Not allowed.", show_alert=True)
            return None
        return await handler(event, data)
