"""Retries for Bot API requests: 429 answers wait ``retry_after``; network errors back off.

aiogram raises ``TelegramRetryAfter`` and ``TelegramNetworkError`` without retrying, so a reply
would be lost on the first flood-control answer. This request middleware retries every call
except ``getUpdates`` (the polling loop has its own backoff). The sleep is injectable so tests
do not wait for Telegram's whole-second ``retry_after``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from aiogram.client.session.middlewares.base import (
    BaseRequestMiddleware,
    NextRequestMiddlewareType,
)
from aiogram.exceptions import TelegramNetworkError, TelegramRetryAfter, TelegramServerError
from aiogram.methods import GetUpdates

from adapters.telegram.config import (
    MAX_RETRY_AFTER_ATTEMPTS,
    MAX_RETRY_AFTER_S,
    NETWORK_BACKOFF_S,
    NETWORK_RETRIES,
)

if TYPE_CHECKING:
    from aiogram import Bot
    from aiogram.methods import Response, TelegramMethod

log = logging.getLogger("tavernbot.telegram.retry")
Sleep = Callable[[float], Awaitable[Any]]


class RetryMiddleware(BaseRequestMiddleware):
    """Retry a request after 429 (as told) and after network or server errors (backoff)."""

    def __init__(self, *, sleep: Sleep = asyncio.sleep) -> None:
        self.sleep = sleep
        self.retried_after: list[float] = []

    async def __call__(
        self,
        make_request: NextRequestMiddlewareType[Any],
        bot: Bot,
        method: TelegramMethod[Any],
    ) -> Response[Any]:
        if isinstance(method, GetUpdates):
            return await make_request(bot, method)
        flood, network = 0, 0
        while True:
            try:
                return await make_request(bot, method)
            except TelegramRetryAfter as exc:
                flood += 1
                if flood > MAX_RETRY_AFTER_ATTEMPTS or exc.retry_after > MAX_RETRY_AFTER_S:
                    raise
                log.warning("%s: 429, retrying after %ss", method.__api_method__, exc.retry_after)
                self.retried_after.append(float(exc.retry_after))
                await self.sleep(float(exc.retry_after))
            except (TelegramNetworkError, TelegramServerError) as exc:
                network += 1
                if network > NETWORK_RETRIES:
                    raise
                delay = NETWORK_BACKOFF_S * 2 ** (network - 1)
                log.warning("%s: %s, retrying in %.1fs", method.__api_method__, exc, delay)
                await self.sleep(delay)
