"""The webhook endpoint shared by several processes behind one URL.

:class:`ClaimingRequestHandler` is aiogram's request handler (which answers Telegram at once and
handles the update in a background task it owns) with one step added before the answer: the
update is claimed in the shared ledger (:mod:`.updates_seen`). A redelivered update that another
process claimed is acknowledged and dropped; and because the claim is written before Telegram
hears back, an earlier update of the same chat is always recorded before a later one arrives,
which is what lets the chat's updates run in order in whichever process takes them. The claim
keeps the update as Telegram sent it, so that if this process dies before handling it a live
one does (:mod:`.orphans`): Telegram will not send it again.
"""

from __future__ import annotations

import logging
from typing import Any

from aiogram import Bot, Dispatcher
from aiogram.types import Update
from aiogram.webhook.aiohttp_server import SimpleRequestHandler
from aiohttp import web

from adapters.telegram.middlewares import chat_of
from adapters.telegram.updates_seen import SharedUpdates

log = logging.getLogger("tavernbot.telegram.webhook")


class ClaimingRequestHandler(SimpleRequestHandler):
    """aiogram's webhook handler that claims each update before acknowledging it."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        bot: Bot,
        *,
        shared: SharedUpdates | None,
        secret_token: str | None = None,
        **data: Any,
    ) -> None:
        super().__init__(dispatcher, bot, secret_token=secret_token, **data)
        self.shared = shared

    async def _handle_request_background(self, bot: Bot, request: web.Request) -> web.Response:
        if self.shared is not None:
            payload = await request.text()  # aiohttp keeps the body: the handler reads it again
            update = Update.model_validate(bot.session.json_loads(payload), context={"bot": bot})
            chat = chat_of(update)
            if not await self.shared.admit(update.update_id, chat.id if chat else None, payload):
                log.info("update %s was taken by another process; dropped", update.update_id)
                return web.json_response({}, dumps=bot.session.json_dumps)
        return await super()._handle_request_background(bot=bot, request=request)
