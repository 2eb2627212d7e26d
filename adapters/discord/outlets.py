"""Where a character's words go: a channel webhook with its name and avatar, or the bot itself.

:class:`Outlets` finds or creates one shared webhook per channel (threads post through their
parent's webhook with ``thread_id``), caches it, and recreates it when it was deleted. A
character whose card has a picture speaks through a webhook of its own wearing that picture
(:mod:`adapters.discord.avatars`); the others through the shared one. Without Manage Webhooks
the bot posts as itself with the character's name in bold. Every call goes through
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

from adapters.discord.avatars import CharacterHooks, PictureLookup, webhook_name
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
    """One cached shared webhook per channel, created on first use and recreated when deleted,
    and the characters' own webhooks (``pictures``: the service's ``character_picture``;
    None: every character speaks through the shared webhook)."""

    def __init__(
        self,
        client: discord.Client,
        *,
        webhook_name: str,
        pictures: PictureLookup | None = None,
    ) -> None:
        self.client = client
        self.webhook_name = webhook_name
        self._hooks: dict[int, discord.Webhook] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        self.characters = CharacterHooks(pictures)
        self.created = 0
        """Shared webhooks created (the characters' own: ``characters.created``)."""

    def invalidate(self, channel_id: int) -> None:
        """Forget the cached webhooks of a channel (one was deleted)."""
        self._hooks.pop(channel_id, None)
        self.characters.forget(channel_id)

    async def _channel(self, channel_id: int) -> discord.abc.Messageable:
        channel = self.client.get_channel(channel_id)
        if channel is None:
            channel = await self.client.fetch_channel(channel_id)
        assert isinstance(channel, discord.abc.Messageable)
        return channel

    def _managed(self, channel_id: int) -> discord.TextChannel | None:
        """The channel when the bot may manage its webhooks, else None."""
        channel = self.client.get_channel(channel_id)
        if not isinstance(channel, discord.TextChannel):
            return None
        if not channel.permissions_for(channel.guild.me).manage_webhooks:
            return None
        return channel

    async def _list(self, channel: discord.TextChannel) -> None:
        """Learn the bot's webhooks in ``channel`` (the shared one and the characters'), once
        until the channel is invalidated; the caller holds the channel's lock."""
        if self.characters.known(channel.id):
            return
        me = self.client.user
        mine = [h for h in await channel.webhooks() if h.user and me and h.user.id == me.id]
        shared = next((h for h in mine if h.name == self.webhook_name), None)
        if shared is not None and channel.id not in self._hooks:
            self._hooks[channel.id] = shared
        self.characters.adopt(channel.id, (h for h in mine if h.name != self.webhook_name))

    async def webhook(self, channel_id: int) -> discord.Webhook | None:
        """The channel's shared webhook, or None when the bot may not manage webhooks there."""
        channel = self._managed(channel_id)
        if channel is None:
            return None
        cached = self._hooks.get(channel_id)
        if cached is not None:
            return cached
        async with self._locks.setdefault(channel_id, asyncio.Lock()):
            if channel_id in self._hooks:
                return self._hooks[channel_id]
            await self._list(channel)
            hook = self._hooks.get(channel_id)
            if hook is None:
                hook = await channel.create_webhook(name=self.webhook_name)
                self.created += 1
            self._hooks[channel_id] = hook
            return hook

    async def character_webhook(self, place: Place, name: str) -> discord.Webhook | None:
        """The character's own webhook wearing its card's picture; None when it has no
        picture (or Discord refused it) or the bot may not manage webhooks there."""
        channel = self._managed(place.channel_id)
        if channel is None or webhook_name(name) == self.webhook_name:
            return None
        picture = await self.characters.picture(place.key, name)
        if picture is None:
            return None
        async with self._locks.setdefault(place.channel_id, asyncio.Lock()):
            await self._list(channel)
            return await self.characters.hook(channel, name, picture)

    async def outlet(self, place: Place, name: str, avatar: str | None) -> Outlet:
        """How to post in ``place``: the character's own webhook, else the shared one when
        allowed, else the bot."""
        try:
            own = await self.character_webhook(place, name)
            if own is not None:
                # The webhook wears the picture: no avatar URL over it.
                return WebhookOutlet(own, place.thread_id, name, None)
            hook = await self.webhook(place.channel_id)
        except discord.Forbidden:
            hook = None
        if hook is not None:
            return WebhookOutlet(hook, place.thread_id, name, avatar)
        return BotOutlet(await self._channel(place.thread_id or place.channel_id), name)
