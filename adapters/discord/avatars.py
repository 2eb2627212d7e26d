"""A webhook of its own for each character with a picture, wearing that picture as its avatar.

Executing a webhook takes an avatar only as a URL, and the cards' pictures live in the
service, not on the web; a webhook's own avatar, though, can be uploaded when it is created or
edited. So a character whose card has a picture speaks through a webhook named after it with
the picture as its avatar (characters without one keep the channel's shared webhook, see
:mod:`adapters.discord.outlets`). A channel holds at most :data:`MAX_CHARACTER_WEBHOOKS` of
them; past it the least recently used one is renamed and given the new picture. A picture the
webhook was not given yet in this run (a re-imported card, or the first use after a restart)
is uploaded again; one over :data:`MAX_AVATAR_BYTES`, or one Discord refuses, leaves the
character on the shared webhook with a warning in the log, never a lost reply.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

import aiohttp
import discord

from engine.errors import EngineError
from engine.turns.api import SessionKey

_log = logging.getLogger(__name__)

MAX_CHARACTER_WEBHOOKS: Final = 10
"""Character webhooks per channel at most. Discord allows 15 webhooks in a channel, the shared
one and other bots' included, so some room is left."""
MAX_AVATAR_BYTES: Final = 8 * 1024 * 1024
"""A picture larger than this is not uploaded as an avatar. Discord documents no limit for
avatars and its apps refuse images over 10 MiB; this stays below that (a refusal under it is
caught all the same)."""
MAX_WEBHOOK_NAME: Final = 80
"""Discord's longest webhook name."""
MAX_REMEMBERED_REFUSALS: Final = 10_000
"""Pictures remembered as refused (not asked of Discord again in this run) at most."""

PictureLookup = Callable[[SessionKey, str], Awaitable[bytes | None]]
"""The picture of a session's character by name (the service's ``character_picture``)."""


def webhook_name(character: str) -> str:
    """The name of a character's own webhook (Discord's length limit applied)."""
    return character[:MAX_WEBHOOK_NAME]


class CharacterHooks:
    """The character webhooks of every channel, least recently used first (see the module
    docstring). The caller (``Outlets``) lists a channel's webhooks and serialises calls per
    channel."""

    def __init__(self, pictures: PictureLookup | None) -> None:
        self._lookup = pictures
        self._hooks: dict[int, OrderedDict[str, discord.Webhook]] = {}
        # Kept across a channel's re-listing: a webhook found again needs no new upload.
        self._given: dict[int, str] = {}
        """Webhook id -> digest of the picture it was given in this run."""
        self._refused: OrderedDict[tuple[int, str, str], None] = OrderedDict()
        self.created = 0
        self.edited = 0

    def forget(self, channel_id: int) -> None:
        """Forget a channel's webhooks (one was deleted; the next use lists them again)."""
        self._hooks.pop(channel_id, None)

    def known(self, channel_id: int) -> bool:
        """Whether the channel's webhooks were listed (and not forgotten since)."""
        return channel_id in self._hooks

    def adopt(self, channel_id: int, hooks: Iterable[discord.Webhook]) -> None:
        """The bot's own webhooks of a channel other than the shared one, as listed: the
        character webhooks of an earlier run (by name; the first of a name wins)."""
        found: OrderedDict[str, discord.Webhook] = OrderedDict()
        for hook in hooks:
            if hook.name and hook.name not in found:
                found[hook.name] = hook
        self._hooks[channel_id] = found

    async def picture(self, key: SessionKey, character: str) -> bytes | None:
        """The character's picture when it can be its avatar; None otherwise (no card, no
        picture, too large, or the service could not say)."""
        if self._lookup is None:
            return None
        try:
            picture = await self._lookup(key, character)
        except EngineError as exc:
            _log.warning("no picture for %s in %s: %s", character, key.key, exc)
            return None
        if picture is None:
            return None
        if len(picture) > MAX_AVATAR_BYTES:
            if self._first_refusal(0, character, f"size:{len(picture)}"):
                _log.warning(
                    "the picture of %s is %d bytes, over MAX_AVATAR_BYTES=%d: it speaks "
                    "without its avatar",
                    character,
                    len(picture),
                    MAX_AVATAR_BYTES,
                )
            return None
        return picture

    async def hook(
        self, channel: discord.TextChannel, character: str, picture: bytes
    ) -> discord.Webhook | None:
        """The character's webhook in ``channel`` wearing ``picture``, created, renamed or
        updated as needed; None when Discord refused (the shared webhook is used then)."""
        hooks = self._hooks.setdefault(channel.id, OrderedDict())
        name = webhook_name(character)
        digest = hashlib.sha256(picture).hexdigest()
        if (channel.id, name, digest) in self._refused:
            return None
        try:
            hook = await self._wear(channel, hooks, name, picture, digest)
        except (discord.HTTPException, ValueError) as exc:
            # Refused (a name Discord does not allow, a picture it cannot read, no room in
            # the channel...): not asked again for this picture; a server error is retried.
            status = exc.status if isinstance(exc, discord.HTTPException) else 400
            lasting = status < 500 and status != 429
            if not lasting or self._first_refusal(channel.id, name, digest):
                _log.warning("no webhook of its own for %s in #%s: %s", name, channel, exc)
            return None
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            _log.warning("no webhook of its own for %s in #%s yet: %s", name, channel, exc)
            return None
        self._given[hook.id] = digest
        hooks.pop(name, None)
        hooks[name] = hook  # the most recently used, last
        return hook

    async def _wear(
        self,
        channel: discord.TextChannel,
        hooks: OrderedDict[str, discord.Webhook],
        name: str,
        picture: bytes,
        digest: str,
    ) -> discord.Webhook:
        """The webhook named ``name`` wearing ``picture``: the known one (given the picture
        when it has another), else the least recently used one renamed when the channel has
        its fill, else a new one."""
        hook = hooks.get(name)
        if hook is not None and self._given.get(hook.id) == digest:
            return hook
        held = name
        if hook is None and len(hooks) >= MAX_CHARACTER_WEBHOOKS:
            held, hook = next(iter(hooks.items()))
        if hook is not None:
            # Entries change only once Discord agreed (a refusal leaves the cache as it was).
            try:
                await self._edit(hook, picture=picture, name=name)
            except discord.NotFound:
                del hooks[held]  # deleted meanwhile: a new one then
            else:
                del hooks[held]
                return hook
        hook = await channel.create_webhook(name=name, avatar=picture)
        self.created += 1
        return hook

    async def _edit(self, hook: discord.Webhook, *, picture: bytes, name: str) -> None:
        # The edited object is not kept: sending goes on through the one listed or created
        # (same id and token).
        if hook.name == name:
            await hook.edit(avatar=picture)
        else:
            await hook.edit(name=name, avatar=picture)
            hook.name = name
        self.edited += 1

    def _first_refusal(self, channel_id: int, name: str, what: str) -> bool:
        """Remember a refusal; True the first time (to log it once)."""
        key = (channel_id, name, what)
        if key in self._refused:
            return False
        self._refused[key] = None
        while len(self._refused) > MAX_REMEMBERED_REFUSALS:
            self._refused.popitem(last=False)
        return True
