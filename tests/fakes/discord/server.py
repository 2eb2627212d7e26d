"""FakeDiscord: Discord's REST API and gateway on 127.0.0.1, for tests through real discord.py.

Start it, build a world (guilds, roles, members, channels), point the bot at ``api_base`` and
``gateway_url``, then drive it from the test: users say things, react, open threads and invoke
commands; the test reads what the bot sent (messages, edits, webhook posts, reactions and
interaction answers). Faults are scripted with :meth:`FakeDiscord.fail_next` (a 429 with
``retry_after`` and a ``Via`` header, as Discord sends it) and :meth:`FakeDiscord.drop_gateway`
(the client resumes). The server is bounded: it stops itself after ``max_lifetime_s`` and
refuses work after ``max_requests``.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.discord.gateway import Gateway
from tests.fakes.discord.interactions import Interactions
from tests.fakes.discord.rest import Rest
from tests.fakes.discord.world import (
    CHANNEL_DM,
    CHANNEL_PUBLIC_THREAD,
    CHANNEL_TEXT,
    MANAGE_MESSAGES,
    MANAGE_WEBHOOKS,
    MEMBER_DEFAULT,
    Channel,
    Guild,
    Role,
    Snowflakes,
    User,
    Webhook,
    message_payload,
    now_iso,
)
from tests.fakes.discord.world_api import WorldApi

MAX_LIFETIME_S = 120.0
MAX_REQUESTS = 20_000
TOKEN = "MTIz.fake.token"


@dataclass
class Request:
    """One decoded REST request as a handler sees it."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    files: list[tuple[str, bytes]]


@dataclass
class Call:
    """One recorded REST call and the status the fake answered."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    status: int = 0
    at: float = 0.0
    answer: Any = None


@dataclass
class Fault:
    """A scripted failure for the next matching calls."""

    method: str
    pattern: re.Pattern[str]
    status: int
    retry_after: float
    times: int
    code: int = 0


@dataclass
class Limits:
    """The fake's own bounds."""

    max_lifetime_s: float = MAX_LIFETIME_S
    max_requests: int = MAX_REQUESTS


class FakeDiscord(WorldApi):
    """A loopback Discord (see the module docstring)."""

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        allow_compression: bool = False,
        token: str = TOKEN,
    ) -> None:
        self.limits = limits or Limits()
        self.allow_compression = allow_compression
        self.token = token
        self.ids = Snowflakes()
        self.app_id = self.ids.next()
        self.bot = User(id=self.app_id, name="tavernbot", bot=True)
        self.guilds: dict[int, Guild] = {}
        self.channels: dict[int, Channel] = {}
        self.messages: dict[int, dict[str, Any]] = {}
        self.webhooks: dict[int, Webhook] = {}
        self.commands: dict[int | None, list[dict[str, Any]]] = {}
        self.edits: list[tuple[int, str]] = []
        self.reactions: list[tuple[int, str, int, str]] = []
        self.typing: list[int] = []
        self.calls: list[Call] = []
        self.unhandled: list[str] = []
        self.gateway_log: list[tuple[Any, Any]] = []
        self.recommended_shards = 1
        """What ``GET /gateway/bot`` answers as ``shards`` (a client without a count uses it)."""
        self.files: dict[str, bytes] = {}
        self.faults: list[Fault] = []
        self.rest = Rest(self)
        self.gateway = Gateway(self)
        self.interactions = Interactions(self)
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._sockets: set[web.WebSocketResponse] = set()
        self._changed = asyncio.Condition()
        self._in_flight = 0
        self._last_activity = time.monotonic()
        self._deadline: asyncio.TimerHandle | None = None
        self.stopped = asyncio.Event()
        self._wakers: set[asyncio.Future[None]] = set()
        self._stop_task: asyncio.Future[None] | None = None

    # ------------------------------------------------------------------ lifecycle
    @property
    def api_base(self) -> str:
        """The REST base to give discord.py (``.../api/v10``)."""
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway_url(self) -> str:
        """The gateway URL to give discord.py."""
        return f"ws://127.0.0.1:{self.port}/gateway"

    async def start(self) -> FakeDiscord:
        """Listen on an ephemeral port of 127.0.0.1; stops itself after the lifetime."""
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/gateway", self.gateway.handle)
        app.router.add_get("/attachments/{name}", self._serve_file)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._serve_rest)
        self._runner = web.AppRunner(app, shutdown_timeout=1.0, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None and server.sockets
        self.port = server.sockets[0].getsockname()[1]
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_later(self.limits.max_lifetime_s, self._expire)
        return self

    def _expire(self) -> None:
        self._stop_task = asyncio.ensure_future(self.stop())

    async def stop(self) -> None:
        """Close every socket and the listener (idempotent)."""
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        for ws in list(self._sockets):
            await ws.close(code=1001, message=b"fake shutting down")
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()
        self.stopped.set()

    def track_ws(self, ws: web.WebSocketResponse) -> None:
        """Remember a gateway socket so that stop() can close it."""
        self._sockets.add(ws)

    def untrack_ws(self, ws: web.WebSocketResponse) -> None:
        """Forget a closed gateway socket."""
        self._sockets.discard(ws)

    # ------------------------------------------------------------------ HTTP plumbing
    async def _serve_file(self, request: web.Request) -> web.StreamResponse:
        data = self.files.get(request.match_info["name"])
        if data is None:
            return web.Response(status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    async def _serve_rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        query = dict(request.query)
        body, files = await _decode(request)
        call = Call(request.method, path, query, body, at=time.monotonic())
        self.calls.append(call)
        self._in_flight += 1
        try:
            status, payload, headers = await self._answer(
                request, Request(request.method, path, query, body, files)
            )
        finally:
            self._in_flight -= 1
            self._last_activity = time.monotonic()
        call.status = status
        call.answer = payload
        self.notify()
        return _json_response(status, payload, headers)

    async def _answer(self, request: web.Request, req: Request) -> tuple[int, Any, dict[str, str]]:
        if len(self.calls) > self.limits.max_requests:
            return 503, {"code": 0, "message": "fake request budget exhausted"}, {}
        fault = self._take_fault(req.method, req.path)
        if fault is not None:
            if fault.status == 429:
                body = {
                    "message": "You are being rate limited.",
                    "retry_after": fault.retry_after,
                    "global": False,
                }
                # Without a Via header discord.py takes a 429 for a Cloudflare ban.
                headers = {
                    "Via": "1.1 google",
                    "X-RateLimit-Scope": "user",
                    "Retry-After": f"{fault.retry_after:g}",
                }
                return 429, body, headers
            return fault.status, {"code": fault.code, "message": "scripted failure"}, {}
        found = self.rest.match(req.method, req.path)
        if found is None:
            self.unhandled.append(f"{req.method} {req.path}")
            return 404, {"code": 0, "message": "404: Not Found"}, {}
        handler, params, needs_auth = found
        if needs_auth and request.headers.get("Authorization") != f"Bot {self.token}":
            return 401, {"code": 0, "message": "401: Unauthorized"}, {}
        status, payload = await handler(req, params)
        return status, payload, {}

    def _take_fault(self, method: str, path: str) -> Fault | None:
        for fault in self.faults:
            if fault.method == method and fault.pattern.search(path) and fault.times > 0:
                fault.times -= 1
                if fault.times == 0:
                    self.faults.remove(fault)
                return fault
        return None

    # ------------------------------------------------------------------ shared helpers
    def notify(self) -> None:
        """Wake every waiter (something changed)."""

        async def _wake() -> None:
            async with self._changed:
                self._changed.notify_all()

        task = asyncio.ensure_future(_wake())
        self._wakers.add(task)
        task.add_done_callback(self._wakers.discard)

    def now(self) -> str:
        """The current time as Discord writes it."""
        return now_iso()

    def guild_of(self, channel: Channel) -> Guild | None:
        """The guild a channel belongs to (None for a DM)."""
        return self.guilds.get(channel.guild_id) if channel.guild_id else None

    def bot_can_channel(self, channel: Channel, what: str) -> bool:
        """Whether the bot has a permission in the channel's guild."""
        guild = self.guild_of(channel)
        if guild is None:
            return False
        bit = {"manage_webhooks": MANAGE_WEBHOOKS, "manage_messages": MANAGE_MESSAGES}[what]
        return bool(guild.permissions_of(self.bot.id) & bit)

    def bot_can(self, message: dict[str, Any], what: str) -> bool:
        """Whether the bot has a permission where ``message`` lives."""
        return self.bot_can_channel(self.channels[int(message["channel_id"])], what)

    def store_files(self, files: list[tuple[str, bytes]]) -> list[dict[str, Any]]:
        """Keep uploaded files and describe them as attachment objects."""
        attachments = []
        for filename, data in files:
            attachment_id = self.ids.next()
            name = f"{attachment_id}-{filename}"
            self.files[name] = data
            url = f"http://127.0.0.1:{self.port}/attachments/{name}"
            attachments.append(
                {
                    "id": str(attachment_id),
                    "filename": filename,
                    "size": len(data),
                    "url": url,
                    "proxy_url": url,
                    "content_type": "application/octet-stream",
                }
            )
        return attachments

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send a gateway event to the bot."""
        await self.gateway.dispatch(event, data)
        self.notify()

    async def store_and_echo(self, data: dict[str, Any]) -> None:
        """Keep a new message and echo it as MESSAGE_CREATE (Discord echoes the bot's own)."""
        self.messages[int(data["id"])] = data
        await self.dispatch("MESSAGE_CREATE", dict(data))

    async def remove_message(self, data: dict[str, Any]) -> None:
        """Delete a message and dispatch MESSAGE_DELETE."""
        self.messages.pop(int(data["id"]), None)
        event = {"id": data["id"], "channel_id": data["channel_id"]}
        if "guild_id" in data:
            event["guild_id"] = data["guild_id"]
        await self.dispatch("MESSAGE_DELETE", event)

    def reaction_payload(self, message: dict[str, Any], user: User, emoji: str) -> dict[str, Any]:
        """A MESSAGE_REACTION_ADD payload (``type`` is required since discord.py 2.4)."""
        data: dict[str, Any] = {
            "user_id": str(user.id),
            "channel_id": message["channel_id"],
            "message_id": message["id"],
            "emoji": {"id": None, "name": emoji},
            "type": 0,
            "burst": False,
            "burst_colors": [],
            "message_author_id": message["author"]["id"],
        }
        if "guild_id" in message:
            data["guild_id"] = message["guild_id"]
            guild = self.guilds[int(message["guild_id"])]
            if user.id in guild.members:
                data["member"] = guild.member_payload(user.id)
        return data

    async def open_thread(
        self, parent: Channel, owner: User, name: str, *, thread_id: int | None = None
    ) -> Channel:
        """Create a public thread under ``parent`` and dispatch THREAD_CREATE."""
        thread = Channel(
            id=thread_id or self.ids.next(),
            type=CHANNEL_PUBLIC_THREAD,
            name=name,
            guild_id=parent.guild_id,
            parent_id=parent.id,
            owner_id=owner.id,
        )
        self.channels[thread.id] = thread
        if parent.guild_id is not None:
            self.guilds[parent.guild_id].channels[thread.id] = thread
        await self.dispatch("THREAD_CREATE", {**thread.payload(), "newly_created": True})
        return thread

    # ------------------------------------------------------------------ world building
    def add_guild(
        self,
        name: str,
        *,
        bot_permissions: int = MEMBER_DEFAULT | MANAGE_WEBHOOKS,
        shard: tuple[int, int] | None = None,
    ) -> Guild:
        """A guild owned by a fresh owner user; the bot is a member with ``bot_permissions``.
        ``shard`` ``(shard_id, shard_count)`` picks an id that Discord puts on that shard."""
        owner = User(id=self.ids.next(), name=f"{name}-owner")
        guild_id = self.ids.next() if shard is None else self.ids.next_on_shard(*shard)
        guild = Guild(id=guild_id, name=name, owner_id=owner.id)
        guild.roles[guild.id] = Role(id=guild.id, name="@everyone", permissions=MEMBER_DEFAULT)
        bot_role = Role(
            id=self.ids.next(), name="tavernbot", permissions=bot_permissions, position=1
        )
        guild.roles[bot_role.id] = bot_role
        guild.members[owner.id] = (owner, [])
        guild.members[self.bot.id] = (self.bot, [bot_role.id])
        self.guilds[guild.id] = guild
        return guild

    def add_role(self, guild: Guild, name: str, permissions: int = 0) -> Role:
        """A role in ``guild``."""
        role = Role(id=self.ids.next(), name=name, permissions=permissions, position=2)
        guild.roles[role.id] = role
        return role

    def add_member(self, guild: Guild, name: str, *, roles: list[Role] | None = None) -> User:
        """A human member of ``guild`` with ``roles``."""
        user = User(id=self.ids.next(), name=name)
        guild.members[user.id] = (user, [r.id for r in roles or []])
        return user

    def add_channel(self, guild: Guild, name: str) -> Channel:
        """A text channel in ``guild`` (add before the bot connects, or it is not cached)."""
        channel = Channel(id=self.ids.next(), type=CHANNEL_TEXT, name=name, guild_id=guild.id)
        guild.channels[channel.id] = channel
        self.channels[channel.id] = channel
        return channel

    def add_dm(self, user: User) -> Channel:
        """A DM channel between ``user`` and the bot."""
        channel = Channel(
            id=self.ids.next(), type=CHANNEL_DM, name="", guild_id=None, recipient=user
        )
        self.channels[channel.id] = channel
        return channel

    def owner(self, guild: Guild) -> User:
        """The guild's owner (has every permission)."""
        return guild.members[guild.owner_id][0]

    def _message(self, channel: Channel, author: User, content: str, **kw: Any) -> dict:
        return message_payload(
            message_id=self.ids.next(),
            channel=channel,
            author=author,
            content=content,
            guild=self.guild_of(channel),
            **kw,
        )


async def _decode(request: web.Request) -> tuple[Any, list[tuple[str, bytes]]]:
    """JSON bodies, or multipart with ``payload_json`` and file parts."""
    files: list[tuple[str, bytes]] = []
    if request.content_type == "multipart/form-data":
        body: Any = None
        reader = await request.multipart()
        async for part in reader:
            if part.name == "payload_json":  # type: ignore[union-attr]
                body = json.loads(await part.text())  # type: ignore[union-attr]
            elif part.filename:  # type: ignore[union-attr]
                files.append((part.filename, bytes(await part.read())))  # type: ignore[union-attr]
        return body, files
    raw = await request.read()
    return (json.loads(raw) if raw else None), files


def _json_response(status: int, payload: Any, headers: dict[str, str]) -> web.Response:
    """A response whose Content-Type is exactly ``application/json`` (discord.py compares it)."""
    if status == 204 or payload is None:
        return web.Response(status=204, headers=headers)
    response = web.Response(status=status, body=json.dumps(payload).encode(), headers=headers)
    response.headers["Content-Type"] = "application/json"
    return response
