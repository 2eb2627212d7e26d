"""Where a character's words go: a channel webhook with its name and avatar, or the bot itself.

:class:`Outlets` finds or creates one webhook per channel (threads post through their parent's
webhook with ``thread_id``), caches it, and recreates it when it was deleted. Without Manage
Webhooks the bot posts as itself with the character's name in bold. Every call goes through
:func:`with_retries`: rate limits wait the platform's ``retry_after`` and transient failures back
off; nothing is dropped silently (a final failure raises :class:`DeliveryError`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiohttp
import discord

from adapters.discord.convert import Place
from engine.errors import EngineError

T = TypeVar("T")
_log = logging.getLogger(__name__)
NO_MENTIONS = discord.AllowedMentions.none()
UNKNOWN_WEBHOOK = 10015
UNKNOWN_MESSAGE = 10008
MAX_BACKOFF_S = 30.0


class DeliveryError(EngineError):
    """A message could not be delivered to Discord after every retry."""


class OutletGoneError(EngineError):
    """The webhook or message an operation needed no longer exists."""


async def with_retries(
    op: Callable[[], Awaitable[T]], *, what: str, attempts: int, backoff_s: float
) -> T:
    """Run ``op``; on 429 wait ``retry_after``, on 5xx or a network error back off, then retry.

    A 404 (unknown webhook or message) raises :class:`OutletGoneError` at once; anything else
    that a retry cannot fix is re-raised; after ``attempts`` tries :class:`DeliveryError`.
    """
    last: BaseException | None = None
    for attempt in range(attempts):
        try:
            return await op()
        except discord.RateLimited as exc:
            delay = exc.retry_after
            last = exc
        except (discord.NotFound, discord.Forbidden) as exc:
            # The webhook or message is gone, or is not ours to edit: the caller posts anew.
            raise OutletGoneError(f"{what}: {exc.text or exc.status} ({exc.code})") from exc
        except discord.HTTPException as exc:
            if exc.status != 429 and exc.status < 500:
                raise
            # discord.py already waited retry_after on its own tries; wait once more here.
            delay = _retry_after(exc) or min(MAX_BACKOFF_S, backoff_s * 2**attempt)
            last = exc
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            delay = min(MAX_BACKOFF_S, backoff_s * 2**attempt)
            last = exc
        _log.warning("%s failed (%s); retry %d in %.2fs", what, last, attempt + 1, delay)
        await asyncio.sleep(delay)
    raise DeliveryError(f"{what}: not delivered after {attempts} attempts ({last})") from last


def _retry_after(exc: discord.HTTPException) -> float | None:
    """The platform's ``Retry-After`` (seconds) on a 429, when it sent one."""
    if exc.status != 429:
        return None
    headers = getattr(exc.response, "headers", None) or {}
    try:
        return min(MAX_BACKOFF_S, float(headers.get("Retry-After", "")))
    except ValueError:
        return None


class Outlet:
    """Post, edit and delete the pieces of one reply in one place."""

    webhook_id: int | None = None
    prefix = ""

    async def send(self, content: str) -> int:
        """Post ``content``; returns the new message id."""
        raise NotImplementedError

    async def edit(self, message_id: int, content: str) -> None:
        """Replace a posted message's content."""
        raise NotImplementedError

    async def delete(self, message_id: int) -> None:
        """Delete a posted message."""
        raise NotImplementedError


class WebhookOutlet(Outlet):
    """The character speaks through the channel's webhook with its own name and avatar."""

    def __init__(
        self, hook: discord.Webhook, thread_id: int | None, name: str, avatar: str | None
    ) -> None:
        self.hook = hook
        self.webhook_id = hook.id
        self.thread: discord.abc.Snowflake = (
            discord.Object(thread_id) if thread_id is not None else discord.utils.MISSING
        )
        self.name = name[:80] or "Character"
        self.avatar = avatar

    async def send(self, content: str) -> int:
        message = await self.hook.send(
            content,
            username=self.name,
            avatar_url=self.avatar or discord.utils.MISSING,
            wait=True,
            thread=self.thread,
            allowed_mentions=NO_MENTIONS,
        )
        return message.id

    async def edit(self, message_id: int, content: str) -> None:
        await self.hook.edit_message(
            message_id, content=content, thread=self.thread, allowed_mentions=NO_MENTIONS
        )

    async def delete(self, message_id: int) -> None:
        await self.hook.delete_message(message_id, thread=self.thread)


class BotOutlet(Outlet):
    """Without webhooks the bot posts itself, the character's name in bold on the first line."""

    def __init__(self, channel: discord.abc.Messageable, name: str) -> None:
        self.channel = channel
        self.prefix = f"**{name}**\n" if name else ""

    async def send(self, content: str) -> int:
        message = await self.channel.send(content, allowed_mentions=NO_MENTIONS)
        return message.id

    def _partial(self, message_id: int) -> discord.PartialMessage:
        get = getattr(self.channel, "get_partial_message", None)
        if get is None:
            raise OutletGoneError(f"cannot edit in channel {self.channel!r}")
        partial: discord.PartialMessage = get(message_id)
        return partial

    async def edit(self, message_id: int, content: str) -> None:
        await self._partial(message_id).edit(content=content, allowed_mentions=NO_MENTIONS)

    async def delete(self, message_id: int) -> None:
        await self._partial(message_id).delete()


class Outlets:
    """One cached webhook per channel, created on first use and recreated when deleted."""

    def __init__(self, client: discord.Client, *, webhook_name: str) -> None:
        self.client = client
        self.webhook_name = webhook_name
        self._hooks: dict[int, discord.Webhook] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        self.created = 0

    def invalidate(self, channel_id: int) -> None:
        """Forget the cached webhook of a channel (it was deleted)."""
        self._hooks.pop(channel_id, None)

    async def _channel(self, channel_id: int) -> discord.abc.Messageable:
        channel = self.client.get_channel(channel_id)
        if channel is None:
            channel = await self.client.fetch_channel(channel_id)
        assert isinstance(channel, discord.abc.Messageable)
        return channel

    async def webhook(self, channel_id: int) -> discord.Webhook | None:
        """The channel's webhook, or None when the bot may not manage webhooks there."""
        channel = self.client.get_channel(channel_id)
        if not isinstance(channel, discord.TextChannel):
            return None
        if not channel.permissions_for(channel.guild.me).manage_webhooks:
            return None
        cached = self._hooks.get(channel_id)
        if cached is not None:
            return cached
        lock = self._locks.setdefault(channel_id, asyncio.Lock())
        async with lock:
            if channel_id in self._hooks:
                return self._hooks[channel_id]
            me = self.client.user
            hooks = await channel.webhooks()
            hook = next(
                (
                    h
                    for h in hooks
                    if h.name == self.webhook_name and h.user and me and h.user.id == me.id
                ),
                None,
            )
            if hook is None:
                hook = await channel.create_webhook(name=self.webhook_name)
                self.created += 1
            self._hooks[channel_id] = hook
            return hook

    async def outlet(self, place: Place, name: str, avatar: str | None) -> Outlet:
        """How to post in ``place``: the webhook when allowed, else the bot."""
        try:
            hook = await self.webhook(place.channel_id)
        except discord.Forbidden:
            hook = None
        if hook is not None:
            return WebhookOutlet(hook, place.thread_id, name, avatar)
        return BotOutlet(await self._channel(place.thread_id or place.channel_id), name)
