"""The fake's REST routes: one table of (method, path pattern) -> handler.

Handlers receive the path's named groups, the query, the decoded body (JSON or multipart with
``payload_json``) and the files, and return ``(status, json_body)``. Each handler echoes what the
bot did to the gateway when Discord would (the bot's own messages, webhook messages, edits,
deletions, reactions and threads), so a bot that does not ignore its own output loops in tests
as it would in production.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from tests.fakes.discord.world import (
    CHANNEL_PUBLIC_THREAD,
    Channel,
    User,
    Webhook,
    message_payload,
)

if TYPE_CHECKING:
    from tests.fakes.discord.server import FakeDiscord, Request

Result = tuple[int, Any]
Handler = Callable[["Request", dict[str, str]], Awaitable[Result]]

UNKNOWN_CHANNEL = 10003
UNKNOWN_MESSAGE = 10008
UNKNOWN_WEBHOOK = 10015
UNKNOWN_INTERACTION = 10062
ALREADY_ACKNOWLEDGED = 40060
MAX_CONTENT = 2000
MAX_CHANNEL_WEBHOOKS = 15  # Discord's webhooks per channel
MAX_WEBHOOKS_REACHED = 30007
INVALID_FORM_BODY = 50035
REFUSED_WEBHOOK_WORDS = ("clyde", "discord")  # Discord refuses webhook names holding these
MAX_HISTORY_PAGE = 100  # Discord serves at most 100 messages per history request


def error(status: int, code: int, message: str) -> Result:
    """Discord's JSON error body."""
    return status, {"code": code, "message": message}


class Rest:
    """REST handlers bound to one :class:`FakeDiscord`."""

    def __init__(self, server: FakeDiscord) -> None:
        self.s = server
        table: list[tuple[str, str, Handler, bool]] = [
            ("GET", r"/users/@me", self.me, True),
            ("GET", r"/oauth2/applications/@me", self.application, True),
            ("GET", r"/gateway(/bot)?", self.gateway, False),
            ("PUT", r"/applications/(?P<app>\d+)/commands", self.put_commands, True),
            ("GET", r"/applications/(?P<app>\d+)/commands", self.get_commands, True),
            (
                "PUT",
                r"/applications/(?P<app>\d+)/guilds/(?P<g>\d+)/commands",
                self.put_commands,
                True,
            ),
            ("POST", r"/channels/(?P<c>\d+)/messages", self.create_message, True),
            ("GET", r"/channels/(?P<c>\d+)/messages", self.channel_history, True),
            ("GET", r"/channels/(?P<c>\d+)/messages/(?P<m>\d+)", self.get_message, True),
            ("PATCH", r"/channels/(?P<c>\d+)/messages/(?P<m>\d+)", self.edit_message, True),
            ("DELETE", r"/channels/(?P<c>\d+)/messages/(?P<m>\d+)", self.delete_message, True),
            (
                "PUT",
                r"/channels/(?P<c>\d+)/messages/(?P<m>\d+)/reactions/(?P<e>[^/]+)/@me",
                self.add_reaction,
                True,
            ),
            (
                "DELETE",
                r"/channels/(?P<c>\d+)/messages/(?P<m>\d+)/reactions/(?P<e>[^/]+)/(?P<u>@me|\d+)",
                self.remove_reaction,
                True,
            ),
            ("POST", r"/channels/(?P<c>\d+)/typing", self.typing, True),
            ("GET", r"/channels/(?P<c>\d+)", self.get_channel, True),
            ("GET", r"/channels/(?P<c>\d+)/webhooks", self.list_webhooks, True),
            ("POST", r"/channels/(?P<c>\d+)/webhooks", self.create_webhook, True),
            ("DELETE", r"/webhooks/(?P<w>\d+)", self.delete_webhook, True),
            ("PATCH", r"/webhooks/(?P<w>\d+)", self.modify_webhook, True),
            ("POST", r"/channels/(?P<c>\d+)/messages/(?P<m>\d+)/threads", self.thread_from, True),
            ("POST", r"/channels/(?P<c>\d+)/threads", self.thread_without, True),
            ("POST", r"/webhooks/(?P<w>\d+)/(?P<t>[^/]+)", self.execute_webhook, False),
            (
                "PATCH",
                r"/webhooks/(?P<w>\d+)/(?P<t>[^/]+)/messages/(?P<m>\d+|@original)",
                self.edit_webhook_message,
                False,
            ),
            (
                "GET",
                r"/webhooks/(?P<w>\d+)/(?P<t>[^/]+)/messages/(?P<m>\d+|@original)",
                self.get_webhook_message,
                False,
            ),
            (
                "DELETE",
                r"/webhooks/(?P<w>\d+)/(?P<t>[^/]+)/messages/(?P<m>\d+|@original)",
                self.delete_webhook_message,
                False,
            ),
            (
                "POST",
                r"/interactions/(?P<i>\d+)/(?P<t>[^/]+)/callback",
                self.interaction_callback,
                False,
            ),
        ]
        self.routes = [
            (method, re.compile(pattern + r"$"), handler, auth)
            for method, pattern, handler, auth in table
        ]

    def match(self, method: str, path: str) -> tuple[Handler, dict[str, str], bool] | None:
        """The handler for a request, its path groups and whether it needs the bot token."""
        for verb, pattern, handler, auth in self.routes:
            found = pattern.match(path)
            if verb == method and found:
                groups = {k: unquote(v) for k, v in found.groupdict().items() if v is not None}
                return handler, groups, auth
        return None

    # ------------------------------------------------------------------ identity
    async def me(self, req: Request, p: dict[str, str]) -> Result:
        return 200, {**self.s.bot.payload(), "verified": True, "mfa_enabled": False, "flags": 0}

    async def application(self, req: Request, p: dict[str, str]) -> Result:
        return 200, {
            "id": str(self.s.app_id),
            "name": "tavernbot-test",
            "description": "",
            "icon": None,
            "bot_public": True,
            "bot_require_code_grant": False,
            "owner": self.s.bot.payload(),
            "verify_key": "0" * 64,
            "flags": 0,
        }

    async def gateway(self, req: Request, p: dict[str, str]) -> Result:
        return 200, {
            "url": self.s.gateway_url,
            "shards": self.s.recommended_shards,
            "session_start_limit": {
                "total": 1000,
                "remaining": 999,
                "reset_after": 0,
                "max_concurrency": 1,
            },
        }

    async def put_commands(self, req: Request, p: dict[str, str]) -> Result:
        commands = []
        for command in req.body or []:
            stored = {
                "description": "",
                "type": 1,
                **command,
                "id": str(self.s.ids.next()),
                "application_id": str(self.s.app_id),
                "version": "1",
            }
            commands.append(stored)
        guild_id = int(p["g"]) if "g" in p else None
        for stored in commands:
            if guild_id is not None:
                stored["guild_id"] = str(guild_id)
        self.s.commands[guild_id] = commands
        return 200, commands

    async def get_commands(self, req: Request, p: dict[str, str]) -> Result:
        return 200, self.s.commands.get(None, [])

    # ------------------------------------------------------------------ messages
    def _channel(self, cid: str) -> Channel | None:
        return self.s.channels.get(int(cid))

    async def create_message(self, req: Request, p: dict[str, str]) -> Result:
        channel = self._channel(p["c"])
        if channel is None:
            return error(404, UNKNOWN_CHANNEL, "Unknown Channel")
        body = req.body or {}
        content = body.get("content") or ""
        if len(content) > MAX_CONTENT:
            return error(
                400, 50035, "Invalid Form Body: content: Must be 2000 or fewer in length."
            )
        data = message_payload(
            message_id=self.s.ids.next(),
            channel=channel,
            author=self.s.bot,
            content=content,
            guild=self.s.guild_of(channel),
            reference=body.get("message_reference"),
            attachments=self.s.store_files(req.files),
        )
        await self.s.store_and_echo(data)
        return 200, data

    async def channel_history(self, req: Request, p: dict[str, str]) -> Result:
        """Messages of a channel, newest first (``before``/``after`` ids, ``limit`` 1-100)."""
        if self._channel(p["c"]) is None:
            return error(404, UNKNOWN_CHANNEL, "Unknown Channel")
        try:
            limit = int(req.query.get("limit", "50"))
        except ValueError:
            return error(400, 50035, "Invalid Form Body: limit")
        if not 1 <= limit <= MAX_HISTORY_PAGE:
            return error(400, 50035, "Invalid Form Body: limit must be 1-100")
        before = int(req.query.get("before") or 0) or None
        after = int(req.query.get("after") or 0)
        found = sorted(
            (
                m
                for m in self.s.messages.values()
                if m["channel_id"] == p["c"]
                and (before is None or int(m["id"]) < before)
                and int(m["id"]) > after
            ),
            key=lambda m: int(m["id"]),
            reverse=True,
        )
        return 200, found[:limit]

    async def get_message(self, req: Request, p: dict[str, str]) -> Result:
        data = self.s.messages.get(int(p["m"]))
        if data is None or data["channel_id"] != p["c"]:
            return error(404, UNKNOWN_MESSAGE, "Unknown Message")
        return 200, data

    async def edit_message(self, req: Request, p: dict[str, str]) -> Result:
        data = self.s.messages.get(int(p["m"]))
        if data is None or data["channel_id"] != p["c"]:
            return error(404, UNKNOWN_MESSAGE, "Unknown Message")
        if data["author"]["id"] != str(self.s.bot.id) or "webhook_id" in data:
            return error(403, 50005, "Cannot edit a message authored by another user")
        return await self._apply_edit(data, req.body or {})

    async def _apply_edit(self, data: dict[str, Any], body: dict[str, Any]) -> Result:
        if "content" in body:
            content = body["content"] or ""
            if len(content) > MAX_CONTENT:
                return error(400, 50035, "Invalid Form Body: content too long")
            data["content"] = content
        data["edited_timestamp"] = self.s.now()
        self.s.edits.append((int(data["id"]), data["content"]))
        await self.s.dispatch("MESSAGE_UPDATE", dict(data))
        return 200, data

    async def delete_message(self, req: Request, p: dict[str, str]) -> Result:
        data = self.s.messages.get(int(p["m"]))
        if data is None or data["channel_id"] != p["c"]:
            return error(404, UNKNOWN_MESSAGE, "Unknown Message")
        await self.s.remove_message(data)
        return 204, None

    async def add_reaction(self, req: Request, p: dict[str, str]) -> Result:
        data = self.s.messages.get(int(p["m"]))
        if data is None:
            return error(404, UNKNOWN_MESSAGE, "Unknown Message")
        self.s.reactions.append((int(p["m"]), p["e"], self.s.bot.id, "add"))
        await self.s.dispatch(
            "MESSAGE_REACTION_ADD", self.s.reaction_payload(data, self.s.bot, p["e"])
        )
        return 204, None

    async def remove_reaction(self, req: Request, p: dict[str, str]) -> Result:
        data = self.s.messages.get(int(p["m"]))
        if data is None:
            return error(404, UNKNOWN_MESSAGE, "Unknown Message")
        user_id = self.s.bot.id if p["u"] == "@me" else int(p["u"])
        if user_id != self.s.bot.id and not self.s.bot_can(data, "manage_messages"):
            return error(403, 50013, "Missing Permissions")
        self.s.reactions.append((int(p["m"]), p["e"], user_id, "remove"))
        return 204, None

    async def typing(self, req: Request, p: dict[str, str]) -> Result:
        if self._channel(p["c"]) is None:
            return error(404, UNKNOWN_CHANNEL, "Unknown Channel")
        self.s.typing.append(int(p["c"]))
        return 204, None

    async def get_channel(self, req: Request, p: dict[str, str]) -> Result:
        channel = self._channel(p["c"])
        if channel is None:
            return error(404, UNKNOWN_CHANNEL, "Unknown Channel")
        return 200, channel.payload()

    # ------------------------------------------------------------------ webhooks
    async def list_webhooks(self, req: Request, p: dict[str, str]) -> Result:
        channel = self._channel(p["c"])
        if channel is None:
            return error(404, UNKNOWN_CHANNEL, "Unknown Channel")
        if not self.s.bot_can_channel(channel, "manage_webhooks"):
            return error(403, 50013, "Missing Permissions")
        hooks = [w.payload() for w in self.s.webhooks.values() if w.channel_id == channel.id]
        return 200, hooks

    async def create_webhook(self, req: Request, p: dict[str, str]) -> Result:
        channel = self._channel(p["c"])
        if channel is None:
            return error(404, UNKNOWN_CHANNEL, "Unknown Channel")
        if channel.type == CHANNEL_PUBLIC_THREAD:
            return error(400, 50024, "Cannot execute action on this channel type")
        if not self.s.bot_can_channel(channel, "manage_webhooks"):
            return error(403, 50013, "Missing Permissions")
        if sum(w.channel_id == channel.id for w in self.s.webhooks.values()) >= (
            MAX_CHANNEL_WEBHOOKS
        ):
            return error(400, MAX_WEBHOOKS_REACHED, "Maximum number of webhooks reached (15)")
        body = req.body or {}
        refused = _refused_webhook_body(body)
        if refused is not None:
            return refused
        hook = Webhook(
            id=self.s.ids.next(),
            token=secrets.token_urlsafe(16),
            channel_id=channel.id,
            guild_id=channel.guild_id,
            name=body.get("name", "hook"),
            owner=self.s.bot,
            avatar=body.get("avatar"),
        )
        self.s.webhooks[hook.id] = hook
        return 200, hook.payload()

    async def modify_webhook(self, req: Request, p: dict[str, str]) -> Result:
        """PATCH /webhooks/{id} (with the bot's token): a new name and/or avatar."""
        hook = self.s.webhooks.get(int(p["w"]))
        if hook is None:
            return error(404, UNKNOWN_WEBHOOK, "Unknown Webhook")
        body = req.body or {}
        refused = _refused_webhook_body(body)
        if refused is not None:
            return refused
        if "name" in body:
            hook.name = body["name"]
        if "avatar" in body:
            hook.avatar = body["avatar"]
        return 200, hook.payload()

    async def delete_webhook(self, req: Request, p: dict[str, str]) -> Result:
        if self.s.webhooks.pop(int(p["w"]), None) is None:
            return error(404, UNKNOWN_WEBHOOK, "Unknown Webhook")
        return 204, None

    async def execute_webhook(self, req: Request, p: dict[str, str]) -> Result:
        if int(p["w"]) == self.s.app_id:
            return await self.s.interactions.followup(req, p["t"])
        hook = self.s.webhooks.get(int(p["w"]))
        if hook is None or hook.token != p["t"]:
            return error(404, UNKNOWN_WEBHOOK, "Unknown Webhook")
        body = req.body or {}
        content = body.get("content") or ""
        if len(content) > MAX_CONTENT:
            return error(400, 50035, "Invalid Form Body: content too long")
        channel = self.s.channels[hook.channel_id]
        thread_id = req.query.get("thread_id")
        if thread_id:
            thread = self.s.channels.get(int(thread_id))
            if thread is None or thread.parent_id != hook.channel_id:
                return error(400, UNKNOWN_CHANNEL, "Unknown Channel (thread_id)")
            channel = thread
        author = User(id=hook.id, name=body.get("username") or hook.name, bot=True)
        data = message_payload(
            message_id=self.s.ids.next(),
            channel=channel,
            author=author,
            content=content,
            guild=self.s.guild_of(channel),
            webhook_id=hook.id,
            attachments=self.s.store_files(req.files),
        )
        # A message without an avatar URL shows the webhook's own avatar.
        data["author"]["avatar"] = None if body.get("avatar_url") else hook.avatar_hash
        data["avatar_url"] = body.get("avatar_url")
        await self.s.store_and_echo(data)
        # Booleans in query strings are 1/0: discord.py sends wait=1.
        if req.query.get("wait") in ("1", "true", "True"):
            return 200, data
        return 204, None

    def _webhook_message(self, p: dict[str, str]) -> tuple[dict[str, Any] | None, Result | None]:
        hook = self.s.webhooks.get(int(p["w"]))
        if hook is None or hook.token != p["t"]:
            return None, error(404, UNKNOWN_WEBHOOK, "Unknown Webhook")
        data = self.s.messages.get(int(p["m"]))
        if data is None or data.get("webhook_id") != str(hook.id):
            return None, error(404, UNKNOWN_MESSAGE, "Unknown Message")
        return data, None

    async def edit_webhook_message(self, req: Request, p: dict[str, str]) -> Result:
        if int(p["w"]) == self.s.app_id:
            return await self.s.interactions.edit(req, p["t"], p["m"])
        data, failure = self._webhook_message(p)
        if data is None:
            assert failure is not None
            return failure
        return await self._apply_edit(data, req.body or {})

    async def get_webhook_message(self, req: Request, p: dict[str, str]) -> Result:
        data, failure = self._webhook_message(p)
        return (200, data) if data is not None else failure  # type: ignore[return-value]

    async def delete_webhook_message(self, req: Request, p: dict[str, str]) -> Result:
        if int(p["w"]) == self.s.app_id:
            return 204, None
        data, failure = self._webhook_message(p)
        if data is None:
            assert failure is not None
            return failure
        await self.s.remove_message(data)
        return 204, None

    # ------------------------------------------------------------------ threads
    async def thread_from(self, req: Request, p: dict[str, str]) -> Result:
        channel = self._channel(p["c"])
        message = self.s.messages.get(int(p["m"]))
        if channel is None or message is None:
            return error(404, UNKNOWN_MESSAGE, "Unknown Message")
        if int(p["m"]) in self.s.channels:
            return error(400, 160004, "A thread has already been created for this message")
        name = (req.body or {}).get("name", "thread")
        # A thread started from a message has the message's id.
        thread = await self.s.open_thread(channel, self.s.bot, name, thread_id=int(p["m"]))
        return 201, thread.payload()

    async def thread_without(self, req: Request, p: dict[str, str]) -> Result:
        channel = self._channel(p["c"])
        if channel is None:
            return error(404, UNKNOWN_CHANNEL, "Unknown Channel")
        name = (req.body or {}).get("name", "thread")
        thread = await self.s.open_thread(channel, self.s.bot, name)
        return 201, thread.payload()

    # ------------------------------------------------------------------ interactions
    async def interaction_callback(self, req: Request, p: dict[str, str]) -> Result:
        return await self.s.interactions.callback(req, int(p["i"]), p["t"])


def _refused_webhook_body(body: dict[str, Any]) -> Result | None:
    """Discord's 400 for a webhook name it does not allow or an avatar that is no image."""
    name = body.get("name")
    if name is not None and (
        not 1 <= len(name) <= 80 or any(w in name.lower() for w in REFUSED_WEBHOOK_WORDS)
    ):
        return error(400, INVALID_FORM_BODY, "Invalid Form Body: name")
    avatar = body.get("avatar")
    if avatar is not None and not str(avatar).startswith("data:image/"):
        return error(400, INVALID_FORM_BODY, "Invalid Form Body: avatar")
    return None
