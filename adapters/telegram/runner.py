"""Running the Telegram front end: the aiogram Bot, Dispatcher and routers, polling or webhook.

``TelegramRunner(service, config)`` builds a Bot whose session talks to ``config.api_base``
(a self-hosted Bot API server or a test server) with retries on flood control and network errors,
a Dispatcher with the routers and middlewares, registers the commands, then receives updates by
long polling (``handle_signals=False``: the composition root owns signals) or through a webhook
served by aiohttp. ``stop()`` stops receiving, lets the updates in flight finish, confirms the
last handled update to Telegram so a restart does not see it again, and closes the session.

With ``coordination`` (the database shared by several processes, PostgreSQL), every process
claims each update before handling it, so a redelivered update is answered once and a chat's
updates run in order across processes (:mod:`.updates_seen`, :mod:`.webhook`); in polling mode
only the holder of the poller role polls, the others stand by and take over when its lease
expires (:mod:`.leader`). Every webhook process registers the same ``webhook_url``: setWebhook
with the same URL is idempotent. Each process also sweeps for updates a dead process had taken
but not handled, and handles them in its place (:mod:`.orphans`, an owned task).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Protocol, runtime_checkable

from aiogram import Bot, Dispatcher
from aiogram.client.default import DefaultBotProperties
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.client.telegram import PRODUCTION, TelegramAPIServer
from aiogram.exceptions import (
    TelegramAPIError,
    TelegramForbiddenError,
    TelegramNetworkError,
    TelegramUnauthorizedError,
)
from aiogram.types import ErrorEvent
from aiogram.utils.backoff import BackoffConfig
from aiohttp import web

from adapters.telegram.app import Frontend
from adapters.telegram.config import TelegramConfig
from adapters.telegram.context import Where
from adapters.telegram.convert import thread_of_branch
from adapters.telegram.leader import PollerLeader, RoleStore
from adapters.telegram.middlewares import AllowListMiddleware, OrderMiddleware
from adapters.telegram.orphans import OrphanSweep
from adapters.telegram.retry import RetryMiddleware, Sleep
from adapters.telegram.routers import build_routers
from adapters.telegram.routers.commands import command_scopes
from adapters.telegram.sender import Place
from adapters.telegram.state import ChatState
from adapters.telegram.updates_seen import SharedUpdates, UpdateLedger
from adapters.telegram.webhook import ClaimingRequestHandler
from engine.errors import ConfigurationError, UnavailableError
from engine.turns.api import RoleplayService, SessionKey

log = logging.getLogger("tavernbot.telegram")
DRAIN_TIMEOUT_S = 30.0
"""How long ``stop()`` waits for updates in flight before closing the session anyway."""
BACKOFF_FACTOR = 1.5
INTERRUPTED_LINE = (
    "The reply to your message was interrupted (the process writing it stopped); "
    "🔄 or /regen retries it."
)
"""What a chat is told when recovery failed a floor whose process died while generating."""


class Coordination(UpdateLedger, RoleStore, Protocol):
    """The shared database's side of several processes serving one bot."""


@runtime_checkable
class Recovering(Protocol):
    """A service that can fail dead processes' turns now (the engine's TavernService)."""

    async def sweep(self) -> object:
        """Fail the turns dead processes left in progress."""
        ...


def bot_id_of(token: str) -> int:
    """The bot's id: the number before the colon of its token."""
    head = token.split(":", 1)[0]
    if not head.isdigit():
        raise ConfigurationError(
            "the Telegram token ([telegram] token) does not start with the bot's id and a colon"
        )
    return int(head)


class TelegramRunner:
    """One Telegram bot, started with :meth:`start` and stopped with :meth:`stop`."""

    def __init__(
        self,
        service: RoleplayService,
        config: TelegramConfig,
        *,
        sleep: Sleep = asyncio.sleep,
        state: ChatState | None = None,
        coordination: Coordination | None = None,
        owner: str = "",
    ) -> None:
        self.service = service
        self.config = config
        self.frontend = Frontend.build(service, config, state)
        self.retry = RetryMiddleware(sleep=sleep)
        self.errors: list[BaseException] = []
        api = TelegramAPIServer.from_base(config.api_base) if config.api_base else PRODUCTION
        session = AiohttpSession(api=api)
        session.middleware(self.retry)
        self.bot = Bot(
            config.token, session=session, default=DefaultBotProperties(parse_mode="HTML")
        )
        self.dispatcher = Dispatcher()
        self.shared: SharedUpdates | None = None
        self.leader: PollerLeader | None = None
        if coordination is not None:
            bot_id = bot_id_of(config.token)
            self.shared = SharedUpdates(coordination, bot_id=bot_id, owner=owner)
            if config.mode == "polling":
                self.leader = PollerLeader(
                    coordination,
                    bot_id=bot_id,
                    holder=owner,
                    lease_s=config.leader_lease_s,
                    start=self._start_polling,
                    stop=self._stop_polling,
                )
        self._leading: asyncio.Task[None] | None = None
        self.orphans: OrphanSweep | None = None
        self._sweeping: asyncio.Task[None] | None = None
        if self.shared is not None:
            self.orphans = OrphanSweep(
                self.shared,
                self.dispatcher,
                self.bot,
                service,
                recover=service.sweep if isinstance(service, Recovering) else None,
            )
        self.order = OrderMiddleware(
            self.frontend.state, config.allowed_users, batch=config.batch_lines, shared=self.shared
        )
        self.dispatcher.update.outer_middleware(self.order)
        allow = AllowListMiddleware(config.allowed_users)
        for observer in (self.dispatcher.message, self.dispatcher.callback_query):
            observer.outer_middleware(allow)
        self.dispatcher.include_routers(*build_routers(self.frontend))
        self.dispatcher.errors.register(self._on_error)
        self._started = asyncio.Event()
        self.dispatcher.startup.register(self._on_startup)
        self._polling: asyncio.Task[Any] | None = None
        self._web: web.AppRunner | None = None
        self._webhook: ClaimingRequestHandler | None = None
        self.webhook_port: int | None = None

    async def _on_startup(self) -> None:
        self._started.set()

    async def _on_error(self, event: ErrorEvent) -> bool:
        if isinstance(event.exception, TelegramForbiddenError):
            # The user blocked the bot or removed it from the group: nothing to answer.
            log.info("update %s: %s", event.update.update_id, event.exception)
            return True
        log.error("handling update %s failed", event.update.update_id, exc_info=event.exception)
        self.errors.append(event.exception)
        return True

    @property
    def state(self) -> ChatState:
        return self.frontend.state

    async def tell_interrupted(self, key: SessionKey, branch: str, floor: int) -> None:
        """Tell the chat (its topic, for a forum topic's branch) that the reply to floor
        ``floor`` was interrupted, with 🔄 to retry it. Any process may send to any chat."""
        chat_id = int(key.key)
        private = chat_id > 0  # groups and channels have negative ids
        place = Place(
            chat_id=chat_id,
            thread_id=None if private else thread_of_branch(branch),
            private=private,
        )
        where = Where(key=key, branch=branch, place=place, private=private, info=None)
        await self.frontend.turns.tell_failed(self.bot, where, floor, INTERRUPTED_LINE)

    async def _register_commands(self) -> None:
        for commands, scope in command_scopes():
            await self.bot.set_my_commands(commands, scope=scope)

    async def start(self) -> None:
        """Register commands and start receiving updates (returns once receiving)."""
        try:
            await self._register_commands()
            if self.config.mode == "webhook":
                await self._start_webhook()
            elif self.leader is not None:
                # Lead now if the role is free (a start failure surfaces here), else stand by.
                await self.leader.step()
                self._leading = asyncio.create_task(self.leader.run(), name="telegram-leader")
            else:
                await self._start_polling()
            if self.orphans is not None:
                self._sweeping = asyncio.create_task(self.orphans.run(), name="telegram-orphans")
        except BaseException as exc:
            # A bad token or an unreachable server: leave nothing open behind.
            if self._web is not None:
                await self._web.cleanup()
                self._web = None
            if self.leader is not None:
                await self.leader.close()
            await self.bot.session.close()
            if isinstance(exc, Exception):
                raise self._start_failure(exc) from exc
            raise

    def _start_failure(self, exc: Exception) -> Exception:
        """``exc`` (raised while starting) as one line saying what failed and what to try."""
        where = self.config.api_base or PRODUCTION.base.split("/bot", 1)[0]
        if isinstance(exc, TelegramUnauthorizedError):
            return ConfigurationError(
                f"the Telegram token ([telegram] token or TELEGRAM_TOKEN) was refused by "
                f"{where}: {exc.message}; check it with the bot's owner (BotFather)"
            )
        if isinstance(exc, TelegramNetworkError | OSError | TimeoutError):
            return UnavailableError(
                f"cannot reach the Telegram Bot API at {where} ([telegram] api_base): "
                f"{exc}; check the network, or api_base if set"
            )
        return exc

    async def _start_polling(self) -> None:
        await self.bot.delete_webhook(drop_pending_updates=False)
        self._started.clear()
        backoff = BackoffConfig(
            min_delay=self.config.polling_backoff_min_s,
            max_delay=self.config.polling_backoff_max_s,
            factor=BACKOFF_FACTOR,
            jitter=0.1,
        )
        self._polling = asyncio.create_task(
            self.dispatcher.start_polling(
                self.bot,
                polling_timeout=self.config.polling_timeout_s,
                backoff_config=backoff,
                handle_signals=False,
                close_bot_session=False,
            )
        )
        waiter = asyncio.create_task(self._started.wait())
        done, _ = await asyncio.wait({waiter, self._polling}, return_when=asyncio.FIRST_COMPLETED)
        if self._polling in done:
            waiter.cancel()
            await self._polling  # raises what made polling fail to start

    async def _start_webhook(self) -> None:
        handler = ClaimingRequestHandler(
            self.dispatcher, self.bot, shared=self.shared, secret_token=self.config.webhook_secret
        )
        app = web.Application()
        handler.register(app, path=self.config.webhook_path)
        self._webhook = handler
        self._web = web.AppRunner(app, handle_signals=False)
        await self._web.setup()
        site = web.TCPSite(self._web, self.config.webhook_host, self.config.webhook_port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        self.webhook_port = sockets[0].getsockname()[1] if sockets else self.config.webhook_port
        url = self.config.webhook_url or (
            f"http://{self.config.webhook_host}:{self.webhook_port}{self.config.webhook_path}"
        )
        await self.dispatcher.emit_startup(bot=self.bot)
        await self.bot.set_webhook(
            url,
            secret_token=self.config.webhook_secret,
            allowed_updates=self.dispatcher.resolve_used_update_types(),
        )

    async def _stop_polling(self) -> None:
        if self._polling is not None:
            with contextlib.suppress(RuntimeError):
                await self.dispatcher.stop_polling()
            with contextlib.suppress(asyncio.CancelledError):
                await self._polling
            self._polling = None

    async def stop(self) -> None:
        """Stop receiving, drain updates in flight, confirm them, close the session (and give
        the poller role up, so a stand-by process takes over at once)."""
        polled = self._polling is not None
        for task in (self._leading, self._sweeping):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._leading = self._sweeping = None
        await self._stop_polling()
        if self.orphans is not None:  # updates it took over finish like the others
            await self.orphans.close(DRAIN_TIMEOUT_S)
        try:
            async with asyncio.timeout(DRAIN_TIMEOUT_S):
                await self.order.drained()
        except TimeoutError:
            log.warning("stopping with %s updates still in flight", self.order.in_flight)
        if self._web is not None:
            await self._web.cleanup()  # also closes the webhook handler's background tasks
            self._web = None
            await self.dispatcher.emit_shutdown(bot=self.bot)
        elif self.order.last_update_id is not None and polled:
            # Confirm what was handled so the next start does not receive it again.
            with contextlib.suppress(TelegramAPIError):
                await self.bot.get_updates(
                    offset=self.order.last_update_id + 1, timeout=0, limit=1
                )
        if self.leader is not None:
            await self.leader.close()  # after the confirmation: the next leader starts past it
        await self.bot.session.close()
