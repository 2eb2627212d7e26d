"""Documents sent to the bot: character cards, presets, world books, regex files and chats.

The file is classified first (see :mod:`adapters.telegram.imports`) so that a malformed file gets
a clear answer before anything reaches the engine; the service then imports it into the chat's
realm and binds it to the session. In groups only admins may import.
"""

from __future__ import annotations

from aiogram import Bot, F, Router
from aiogram.types import Message

from adapters.telegram.app import Frontend
from adapters.telegram.config import MAX_IMPORT_BYTES
from adapters.telegram.convert import session_key
from adapters.telegram.imports import detect
from adapters.telegram.sender import Place, send_plain
from engine.errors import EngineError

KIND_NAMES = {
    "card": "character card",
    "preset": "preset",
    "worldbook": "world book",
    "regex": "regex scripts",
    "chat": "chat",
}


def build(frontend: Frontend) -> Router:
    """The router for document imports."""
    router = Router(name="telegram-documents")

    @router.message(F.document)
    async def on_document(message: Message, bot: Bot) -> None:
        document = message.document
        if document is None or message.from_user is None:
            return
        thread = message.message_thread_id if message.is_topic_message else None
        place = Place(
            chat_id=message.chat.id, thread_id=thread, private=message.chat.type == "private"
        )
        if not await frontend.may_write(bot, message.chat, message.from_user.id):
            await send_plain(bot, place, "Only group admins can import files here.")
            return
        info = await frontend.resolver.session(message.chat)
        if info is None:
            await send_plain(bot, place, "This group has no session yet: an admin can /start it.")
            return
        filename = document.file_name or "document"
        if (document.file_size or 0) > MAX_IMPORT_BYTES:
            limit = MAX_IMPORT_BYTES // (1024 * 1024)
            await send_plain(bot, place, f"{filename}: too large to import (over {limit} MB).")
            return
        buffer = await bot.download(document)
        data = buffer.read() if buffer is not None else b""
        try:
            found = detect(filename, data, message.caption)
            summary = await frontend.service.import_asset(
                session_key(message.chat), found.kind, filename, data
            )
        except EngineError as exc:
            await send_plain(bot, place, f"⚠️ Could not import {filename}: {exc}")
            return
        facts = {**found.facts, **dict(summary.details)}
        listed = "\n".join(f"• {k}: {v}" for k, v in facts.items() if v not in (None, ""))
        bound = " and bound it to this chat" if summary.kind != "chat" else ""
        text = f"Imported {KIND_NAMES.get(summary.kind, summary.kind)} “{summary.name}”{bound}."
        await send_plain(bot, place, text + (f"\nFound:\n{listed}" if listed else ""))
        if summary.kind == "card":
            # A new story opens with the character's first message (SillyTavern does).
            where = await frontend.resolver.where(message, reply=False)
            await frontend.turns.greet(bot, where, message.from_user.full_name)

    return router
