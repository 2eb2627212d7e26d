"""Showing replies on Telegram: streamed, split, escaped, with the swipe keyboard.

A :class:`ReplyWriter` shows one reply while it is generated. In private chats it streams
through message drafts (``sendMessageDraft``) and sends the finished parts as messages; in
groups (or when drafts are refused) it sends a message and edits it, at most once per edit
interval with the latest text (one edit in flight, the newest text wins). Text past 4096 UTF-16
units continues in a new message. "typing" is shown while the model works. ``finish`` puts the
final text in place with the keyboard under the last part, deleting parts a shorter page no
longer needs. Flood control and network errors are retried by the session's RetryMiddleware.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiogram import Bot
from aiogram.exceptions import TelegramAPIError, TelegramBadRequest
from aiogram.types import InlineKeyboardMarkup, ReplyParameters

from adapters.telegram.config import TYPING_REFRESH_S, TelegramConfig
from adapters.telegram.formatting import escape, render_parts, split_text

log = logging.getLogger("tavernbot.telegram.sender")
_draft_ids = itertools.count(1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    """Where a reply goes: chat, forum thread, whether private, and the message it answers."""

    chat_id: int
    thread_id: int | None = None
    private: bool = True
    reply_to: int | None = None


def _not_modified(exc: TelegramBadRequest) -> bool:
    return "not modified" in exc.message


def _not_found(exc: TelegramBadRequest) -> bool:
    return "message to edit not found" in exc.message


async def send_plain(
    bot: Bot, place: Place, text: str, *, markup: InlineKeyboardMarkup | None = None
) -> list[int]:
    """Send plain ``text`` (escaped, split at the limit); the keyboard goes under the last part."""
    parts = split_text(text) if text.strip() else ["…"]
    ids = []
    for index, part in enumerate(parts):
        sent = await bot.send_message(
            place.chat_id,
            escape(part),
            parse_mode="HTML",
            message_thread_id=place.thread_id,
            reply_markup=markup if index == len(parts) - 1 else None,
        )
        ids.append(sent.message_id)
    return ids


async def drop_keyboard(bot: Bot, chat_id: int, message_id: int) -> None:
    """Remove the inline keyboard from an older reply (it may be gone or keyboard-less)."""
    with contextlib.suppress(TelegramAPIError):
        await bot.edit_message_reply_markup(chat_id=chat_id, message_id=message_id)


class ReplyWriter:
    """Shows one reply while it streams, then in its final form (see the module docstring)."""

    def __init__(
        self,
        bot: Bot,
        place: Place,
        config: TelegramConfig,
        *,
        speaker: str | None = None,
        existing: Sequence[int] = (),
    ) -> None:
        self.bot = bot
        self.place = place
        self.speaker = speaker
        self.ids: list[int] = list(existing)
        self._shown: list[str | None] = [None] * len(self.ids)
        self._drafts = config.use_drafts and place.private and not existing
        self._interval = (
            config.draft_interval_s
            if self._drafts
            else config.edit_interval_private_s
            if place.private
            else config.edit_interval_group_s
        )
        self._draft_id = next(_draft_ids)
        self._latest = ""
        self._flushed = ""
        self._last_flush = 0.0
        self._wake = asyncio.Event()
        self._close_event = asyncio.Event()
        self._closed = False
        self._tasks: set[asyncio.Task[Any]] = set()

    async def __aenter__(self) -> ReplyWriter:
        self._tasks.add(asyncio.create_task(self._typing(), name="typing"))
        self._tasks.add(asyncio.create_task(self._flusher(), name="flusher"))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stop()

    async def _stop(self) -> None:
        # The flusher is never cancelled mid-request (a message Telegram created but whose id
        # never came back would be shown twice); it sees the close and returns between sends.
        self._closed = True
        self._wake.set()
        self._close_event.set()
        for task in self._tasks:
            if task.get_name() == "typing" and not task.done():
                task.cancel()
        for task in self._tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception:  # a broken preview must not cost the final reply
                log.exception("streaming task failed in chat %s", self.place.chat_id)
        self._tasks.clear()

    async def on_text(self, text: str) -> None:
        """The engine's streaming callback: remember the newest text and wake the flusher."""
        self._latest = text
        self._wake.set()

    # ----------------------------------------------------------------- background
    async def _typing(self) -> None:
        while not self._closed:
            with contextlib.suppress(TelegramAPIError):
                await self.bot.send_chat_action(
                    self.place.chat_id, "typing", message_thread_id=self.place.thread_id
                )
            await asyncio.sleep(TYPING_REFRESH_S)

    async def _flusher(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._closed:
                return
            wait = self._last_flush + self._interval - time.monotonic()
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._close_event.wait(), wait)
            if self._closed:
                return
            text = self._latest
            if text == self._flushed or not text.strip():
                continue
            try:
                await self._show_partial(text)
            except TelegramAPIError as exc:
                # A failed preview is not fatal: finish() delivers the final text.
                log.warning("streaming preview failed in chat %s: %s", self.place.chat_id, exc)
            self._flushed = text
            self._last_flush = time.monotonic()

    async def _show_partial(self, text: str) -> None:
        parts = render_parts(text, speaker=self.speaker)
        if self._drafts:
            for index, part in enumerate(parts[:-1]):
                await self._put(index, part, None)
            try:
                await self.bot.send_message_draft(
                    chat_id=self.place.chat_id,
                    draft_id=self._draft_id,
                    text=parts[-1],
                    parse_mode="HTML",
                    message_thread_id=self.place.thread_id,
                )
            except TelegramAPIError as exc:
                # Older or self-hosted Bot API servers may not know drafts (404) or refuse them.
                log.info(
                    "drafts refused in chat %s (%s); editing instead", self.place.chat_id, exc
                )
                self._drafts = False
                await self._put(len(parts) - 1, parts[-1], None)
            return
        for index, part in enumerate(parts):
            await self._put(index, part, None)

    # ----------------------------------------------------------------- delivery
    async def _put(self, index: int, html: str, markup: InlineKeyboardMarkup | None) -> None:
        """Make message ``index`` show ``html`` (sending it if it does not exist yet)."""
        key = html + ("\x00kb" + markup.model_dump_json() if markup else "")
        if index < len(self.ids):
            if self._shown[index] == key:
                return
            try:
                await self.bot.edit_message_text(
                    html,
                    chat_id=self.place.chat_id,
                    message_id=self.ids[index],
                    parse_mode="HTML",
                    reply_markup=markup,
                )
            except TelegramBadRequest as exc:
                if not _not_found(exc):
                    if not _not_modified(exc):
                        raise
                    self._shown[index] = key
                    return
                # The message was deleted meanwhile: send this part and the ones after it
                # anew (removing the later ones first, so the parts stay in order).
                for later in self.ids[index + 1 :]:
                    with contextlib.suppress(TelegramAPIError):
                        await self.bot.delete_message(self.place.chat_id, later)
                del self.ids[index:]
                del self._shown[index:]
            else:
                self._shown[index] = key
                return
        reply = None
        if index == 0 and self.place.reply_to is not None:
            reply = ReplyParameters(
                message_id=self.place.reply_to, allow_sending_without_reply=True
            )
        sent = await self.bot.send_message(
            self.place.chat_id,
            html,
            parse_mode="HTML",
            message_thread_id=self.place.thread_id,
            reply_markup=markup,
            reply_parameters=reply,
        )
        self.ids.append(sent.message_id)
        self._shown.append(key)

    async def finish(self, text: str, markup: InlineKeyboardMarkup | None) -> list[int]:
        """Show the final ``text`` with ``markup`` under the last part; return the message ids."""
        await self._stop()
        parts = render_parts(text, speaker=self.speaker)
        for index, part in enumerate(parts):
            await self._put(index, part, markup if index == len(parts) - 1 else None)
        for surplus in self.ids[len(parts) :]:
            with contextlib.suppress(TelegramAPIError):
                await self.bot.delete_message(self.place.chat_id, surplus)
        del self.ids[len(parts) :]
        del self._shown[len(parts) :]
        return list(self.ids)

    async def fail(self, message: str, markup: InlineKeyboardMarkup | None = None) -> list[int]:
        """The turn failed: say so where the reply would have been (in its first message, the
        parts after it deleted), with ``markup`` (the retry button) under it; return its id."""
        await self._stop()
        await self._put(0, f"⚠️ {escape(message)}", markup)
        for surplus in self.ids[1:]:
            with contextlib.suppress(TelegramAPIError):
                await self.bot.delete_message(self.place.chat_id, surplus)
        del self.ids[1:]
        del self._shown[1:]
        return list(self.ids)
