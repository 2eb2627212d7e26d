"""A loopback fake of the Telegram Bot API that the real aiogram client talks to over HTTP.

Start it with ``async with FakeTelegramServer() as srv`` and point aiogram at ``srv.base_url``
(``TelegramAPIServer.from_base``). It serves ``POST /bot<token>/<method>`` and file downloads at
``GET /file/bot<token>/<path>``; any other method answers 404 and is listed in ``unhandled``.

Test side: build users and chats, inject updates (``send_text``, ``send_document``, ``press``,
``react``, ``create_topic``), read what the bot sent (``bot_messages``, ``calls``, ``wait_for``),
script faults (``fail_next`` for any method, ``fail_polls`` for getUpdates outages) and, once a
webhook is set, receive updates by POST instead of long polling. ``balance(urls)`` stands for
a load balancer in front of the webhook URL (each delivery goes to the next of several
processes) and ``redeliver`` posts an update again, as Telegram retries a webhook.
``exclusive_polls = True`` answers a getUpdates that overlaps another with 409 Conflict, as
Telegram does, and counts it in ``poll_conflicts``.

Bounded: the server refuses requests after ``max_requests`` and shuts itself down after
``max_lifetime_s``; long polls wait at most ``max_poll_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.telegram import builders
from tests.fakes.telegram.methods import ApiError, FakeMessage, World
from tests.fakes.telegram.scenes import Scenes

Json = dict[str, Any]
DEFAULT_TOKEN = "123456:TEST-TOKEN"
DEFAULT_UPDATE_TYPES = frozenset(
    {"message", "edited_message", "callback_query", "my_chat_member", "channel_post"}
)
"""What getUpdates delivers when ``allowed_updates`` is empty: not reactions, not chat_member."""
DROP = 0
"""``fail_next(..., status=DROP)`` cuts the connection instead of answering."""
MAX_LIFETIME_S = 120.0
MAX_REQUESTS = 50_000
MAX_POLL_S = 2.0
POLL_CHECK_S = 0.1
"""How often a waiting long poll checks whether its client went away."""
_JSON_FIELDS = frozenset(
    {
        "reply_markup",
        "reaction",
        "commands",
        "allowed_updates",
        "scope",
        "reply_parameters",
        "entities",
        "link_preview_options",
        "caption_entities",
    }
)
_INT_FIELDS = frozenset(
    {
        "chat_id",
        "message_id",
        "offset",
        "limit",
        "timeout",
        "message_thread_id",
        "draft_id",
        "user_id",
    }
)


@dataclass(frozen=True)
class Call:
    """One request the bot made: method, decoded parameters, answer status."""

    method: str
    params: Json
    status: int
    at: float = field(default_factory=time.monotonic)


@dataclass
class _Fault:
    status: int
    description: str
    retry_after: int | None
    times: int


class FakeTelegramServer(Scenes):
    """The fake Bot API server (see the module docstring)."""

    def __init__(
        self,
        *,
        token: str = DEFAULT_TOKEN,
        max_lifetime_s: float = MAX_LIFETIME_S,
        max_requests: int = MAX_REQUESTS,
        max_poll_s: float = MAX_POLL_S,
    ) -> None:
        self.tokens = {token}
        self.token = token
        bot_id = int(token.split(":", 1)[0])
        self.world = World(builders.user(bot_id, "Tavern", is_bot=True, username="tavern_bot"))
        self.max_lifetime_s = max_lifetime_s
        self.max_requests = max_requests
        self.max_poll_s = max_poll_s
        self.calls: list[Call] = []
        self.poll_calls: list[Call] = []
        self.unhandled: list[str] = []
        self.updates: list[Json] = []
        self.delivered: dict[int, int] = {}
        self.webhook_posts: list[int] = []
        self.updates_sent: list[Json] = []
        """Every update posted to the webhook, in order (redeliveries not repeated)."""
        self.listeners: list[Callable[[Call], None]] = []
        """Called with every recorded call (cheap hooks for benchmarks)."""
        self.allowed_updates: frozenset[str] = DEFAULT_UPDATE_TYPES
        self.webhook_targets: list[str] = []
        self.webhook_deliveries: list[tuple[int, str]] = []
        """(update id, URL) of every successful webhook delivery, in order."""
        self.exclusive_polls = False
        self.poll_conflicts = 0
        self.polls_now = 0
        self.max_polls_at_once = 0
        self._next_target = itertools.count()
        self._pick: Callable[[Json], int] | None = None
        self._confirmed = 0
        self._update_ids = itertools.count(1)
        self._user_ids = itertools.count(1000)
        self._group_ids = itertools.count(1)
        self._query_ids = itertools.count(1)
        self._faults: dict[str, list[_Fault]] = {}
        self._poll_outage: tuple[int, str] = (0, "502")
        self._changed = asyncio.Condition()
        self._requests = 0
        self._runner: web.AppRunner | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._expiry: asyncio.TimerHandle | None = None
        self.stopped = False
        self.port = 0

    # ----------------------------------------------------------------- lifecycle
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/bot{token}/{method}", self._handle)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]
        loop = asyncio.get_running_loop()
        self._expiry = loop.call_later(self.max_lifetime_s, self._expire)

    def _expire(self) -> None:
        self._spawn(self.stop())

    async def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        if self._expiry is not None:
            self._expiry.cancel()
        async with self._changed:
            self._changed.notify_all()
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                task.cancel()
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> FakeTelegramServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----------------------------------------------------------------- HTTP
    async def _decode(self, request: web.Request) -> Json:
        params: Json = {}
        if request.content_type == "application/json":
            return dict(await request.json())
        form = await request.post()
        for key, value in form.items():
            if isinstance(value, web.FileField):
                params[key] = (value.filename, value.file.read())
            elif key in _JSON_FIELDS:
                params[key] = json.loads(value)
            elif key in _INT_FIELDS:
                params[key] = int(value) if value.lstrip("-").isdigit() else value
            elif value in ("true", "false"):
                params[key] = value == "true"
            else:
                params[key] = value
        # aiogram sends a file as its own part and names it in the field: "attach://<part>".
        for key, value in list(params.items()):
            if isinstance(value, str) and value.startswith("attach://"):
                params[key] = params.pop(value.removeprefix("attach://"), None)
        return params

    @staticmethod
    def _error(status: int, description: str, retry_after: int | None = None) -> web.Response:
        body: Json = {"ok": False, "error_code": status, "description": description}
        if retry_after is not None:
            body["parameters"] = {"retry_after": retry_after}
        return web.json_response(body, status=status)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        method = request.match_info["method"]
        if request.match_info["token"] not in self.tokens:
            return self._error(401, "Unauthorized")
        self._requests += 1
        if self.stopped or self._requests > self.max_requests:
            return self._error(503, "Service Unavailable: fake server limit reached")
        params = await self._decode(request)
        if method.lower() == "getupdates":
            return await self._get_updates(request, params)
        status, response = await self._dispatch(method, params)
        await self._record(Call(method, params, status))
        if status == DROP and request.transport is not None:
            request.transport.close()  # the connection breaks before any answer
        return response

    async def _dispatch(self, method: str, params: Json) -> tuple[int, web.Response]:
        faults = self._faults.get(method)
        if faults:
            fault = faults[0]
            fault.times -= 1
            if fault.times <= 0:
                faults.pop(0)
            status = fault.status or 502
            return fault.status, self._error(status, fault.description, fault.retry_after)
        handler: Callable[[Json], Any] | None = getattr(self.world, method, None)
        if handler is None or method.startswith("_") or not method[:1].islower():
            self.unhandled.append(method)
            return 404, self._error(404, "Not Found")
        try:
            result = handler(params)
        except ApiError as exc:
            return exc.status, self._error(exc.status, exc.description, exc.retry_after)
        return 200, web.json_response({"ok": True, "result": result})

    async def _record(self, call: Call) -> None:
        async with self._changed:
            (self.poll_calls if call.method == "getUpdates" else self.calls).append(call)
            for listener in self.listeners:
                listener(call)
            self._changed.notify_all()

    async def _download(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] not in self.tokens:
            return web.Response(status=401)
        data = self.world.file_paths.get(request.match_info["path"])
        if data is None:
            return web.Response(status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    # ----------------------------------------------------------------- polling
    def _pending(self) -> list[Json]:
        return [u for u in self.updates if u["update_id"] >= self._confirmed]

    async def _get_updates(self, request: web.Request, params: Json) -> web.StreamResponse:
        if self.world.webhook.get("url"):
            await self._record(Call("getUpdates", params, 409))
            return self._error(
                409,
                "Conflict: can't use getUpdates method while webhook is active; "
                "use deleteWebhook to delete the webhook first",
            )
        failing, mode = self._poll_outage
        if failing > 0 and mode != "lose":
            self._poll_outage = (failing - 1, mode)
            await self._record(Call("getUpdates", params, 502))
            if mode == "drop" and request.transport is not None:
                request.transport.close()
                return web.Response(status=502)
            return self._error(502, "Bad Gateway")
        if self.exclusive_polls and self.polls_now > 0:
            self.poll_conflicts += 1
            await self._record(Call("getUpdates", params, 409))
            return self._error(
                409,
                "Conflict: terminated by other getUpdates request; "
                "make sure that only one bot instance is running",
            )
        self.polls_now += 1
        self.max_polls_at_once = max(self.max_polls_at_once, self.polls_now)
        try:
            return await self._long_poll(request, params)
        finally:
            self.polls_now -= 1

    async def _long_poll(self, request: web.Request, params: Json) -> web.StreamResponse:
        if params.get("allowed_updates") is not None:
            allowed = params["allowed_updates"]
            self.allowed_updates = frozenset(allowed) if allowed else DEFAULT_UPDATE_TYPES
        offset = int(params.get("offset") or 0)
        if offset > self._confirmed:
            self._confirmed = offset
            self.updates = self._pending()
        limit = int(params.get("limit") or 100)
        deadline = time.monotonic() + min(float(params.get("timeout") or 0), self.max_poll_s)
        async with self._changed:
            while not self.stopped:
                batch = self._deliverable()[:limit]
                remaining = deadline - time.monotonic()
                gone = request.transport is None or request.transport.is_closing()
                if batch or remaining <= 0 or gone:
                    break
                with contextlib.suppress(TimeoutError):
                    # Short waits: a client that went away (killed) ends its poll soon.
                    await asyncio.wait_for(self._changed.wait(), min(remaining, POLL_CHECK_S))
            batch = [] if self.stopped else self._deliverable()[:limit]
        for update in batch:
            self.delivered[update["update_id"]] = self.delivered.get(update["update_id"], 0) + 1
        failing, mode = self._poll_outage
        if batch and mode == "lose" and failing > 0 and request.transport is not None:
            # The batch left the server but the answer never reaches the bot.
            self._poll_outage = (failing - 1, mode)
            await self._record(Call("getUpdates", params, 502))
            request.transport.close()
            return web.Response(status=502)
        await self._record(Call("getUpdates", params, 200))
        return web.json_response({"ok": True, "result": batch})

    def _deliverable(self) -> list[Json]:
        kinds = self.allowed_updates
        # Updates of kinds the bot did not ask for are dropped, as the Bot API does.
        self.updates = [u for u in self._pending() if any(k in u for k in kinds)]
        return self.updates

    async def push_update(self, kind: str, payload: Json) -> Json:
        """Queue an update of ``kind`` (message, callback_query, message_reaction, ...)."""
        update = {"update_id": next(self._update_ids), kind: payload}
        async with self._changed:
            self.updates.append(update)
            self._changed.notify_all()
        if self.world.webhook.get("url"):
            self.updates_sent.append(update)
            self._spawn(self._post_webhook(update))
        return update

    def balance(self, urls: list[str], pick: Callable[[Json], int] | None = None) -> None:
        """Deliver webhook updates to ``urls`` in turn, or to ``urls[pick(update)]`` (a load
        balancer in front of the registered URL, which must be set too)."""
        self.webhook_targets = list(urls)
        self._pick = pick

    def redeliver(self, update_id: int) -> None:
        """Post update ``update_id`` to the webhook again (to the next balanced target)."""
        update = next(u for u in self.updates_sent if u["update_id"] == update_id)
        self._spawn(self._post_webhook(update))

    async def _post_webhook(self, update: Json) -> None:
        hook = self.world.webhook
        url = str(hook["url"])
        if self.webhook_targets:
            index = next(self._next_target) if self._pick is None else self._pick(update)
            url = self.webhook_targets[index % len(self.webhook_targets)]
        headers = {}
        if hook.get("secret_token"):
            headers["X-Telegram-Bot-Api-Secret-Token"] = str(hook["secret_token"])
        async with aiohttp.ClientSession() as session:
            for _attempt in range(5):
                try:
                    async with session.post(url, json=update, headers=headers) as resp:
                        if resp.status == 200:
                            self.webhook_posts.append(update["update_id"])
                            self.webhook_deliveries.append((update["update_id"], url))
                            self._confirmed = max(self._confirmed, update["update_id"] + 1)
                            return
                except aiohttp.ClientError:
                    pass
                await asyncio.sleep(0.05)

    # ----------------------------------------------------------------- faults
    def fail_next(
        self,
        method: str,
        *,
        status: int = 429,
        retry_after: int | None = 1,
        description: str | None = None,
        times: int = 1,
    ) -> None:
        """Answer the next ``times`` calls of ``method`` with an error (429 by default;
        ``DROP`` cuts the connection, a network error for the client)."""
        if description is None:
            description = (
                f"Too Many Requests: retry after {retry_after}" if status == 429 else "Bad Request"
            )
        fault = _Fault(status, description, retry_after if status == 429 else None, times)
        self._faults.setdefault(method, []).append(fault)

    def fail_polls(self, count: int, *, mode: str = "502") -> None:
        """Make the next ``count`` getUpdates calls fail: ``502``, ``drop`` (connection cut) or
        ``lose`` (updates handed out, then the connection cut before the answer arrives)."""
        self._poll_outage = (count, mode)

    # ----------------------------------------------------------------- reading (test side)
    def bot_messages(self, chat_id: int, *, thread_id: int | None = None) -> list[FakeMessage]:
        """The bot's visible messages in a chat (optionally one topic), oldest first."""
        bot_id = int(self.world.bot_user["id"])
        return [
            m
            for (cid, _), m in sorted(self.world.messages.items())
            if cid == chat_id
            and m.sender_id == bot_id
            and not m.deleted
            and (thread_id is None or m.thread_id == thread_id)
        ]

    def calls_of(self, method: str, **match: Any) -> list[Call]:
        """Recorded successful or failed calls of ``method`` whose params include ``match``."""
        return [
            c
            for c in self.calls
            if c.method == method and all(c.params.get(k) == v for k, v in match.items())
        ]

    async def wait_for(
        self,
        method: str,
        predicate: Callable[[Call], bool] = lambda call: True,
        *,
        wait_s: float = 10.0,
        count: int = 1,
    ) -> Call:
        """Wait until ``count`` successful calls of ``method`` match; return the last one."""

        def matching() -> list[Call]:
            pool = self.poll_calls if method == "getUpdates" else self.calls
            return [c for c in pool if c.method == method and c.status == 200 and predicate(c)]

        async with self._changed:
            await asyncio.wait_for(
                self._changed.wait_for(lambda: len(matching()) >= count), wait_s
            )
            return matching()[count - 1]

    async def wait_until(self, condition: Callable[[], bool], *, wait_s: float = 10.0) -> None:
        """Wait until ``condition()`` holds (checked after each request)."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(condition), wait_s)
