"""Telling a channel that the reply to its message was interrupted: the process generating it
died and this process's recovery failed the floor.

Only a process serving the guild's shard tells it (direct messages: the process serving shard
0, where Discord delivers them), so a channel hears from the process that serves it. The
notice is remembered as the failed floor's reply, so 🔄 on it retries the floor as 🔄 on a
failed turn's notice does.
"""

from __future__ import annotations

import logging
from typing import Final

import discord

from adapters.discord.convert import Place
from adapters.discord.options import DiscordOptions
from adapters.discord.stream import Delivered
from adapters.discord.turns import ReplyRecord, Turns
from engine.turns.api import MAIN_BRANCH, RoleplayService, SessionKey

_log = logging.getLogger(__name__)

INTERRUPTED_NOTICE: Final = (
    "*(no reply: it was interrupted, the process writing it stopped; 🔄 retries it)*"
)
"""What a channel is told when recovery failed a floor whose process died while generating."""
DM_REALM_PREFIX: Final = "dm:"
"""How a direct message's realm starts (``dm:<user id>``)."""
SHARD_ID_SHIFT: Final = 22
"""Bits of a snowflake below its timestamp: ``(guild_id >> 22) % shard_count`` is its shard."""


def shard_of(realm: str, shard_count: int) -> int:
    """The shard a realm's events arrive on: its guild's, or 0 for direct messages."""
    if realm.startswith(DM_REALM_PREFIX):
        return 0
    return (int(realm) >> SHARD_ID_SHIFT) % shard_count


def serves(options: DiscordOptions, realm: str) -> bool:
    """Whether this process serves ``realm``'s shard (always, when not sharded)."""
    if options.shard_count is None or not options.shard_ids:
        return True
    return shard_of(realm, options.shard_count) in options.shard_ids


async def tell_interrupted(
    client: discord.Client,
    service: RoleplayService,
    turns: Turns,
    options: DiscordOptions,
    *,
    key: SessionKey,
    branch: str,
    floor: int,
) -> bool:
    """Post the notice in the channel (or the branch's thread) when this process serves it;
    returns whether it was posted."""
    if not serves(options, key.realm):
        _log.info("floor %s of %s was interrupted; its shard is served elsewhere", floor, key)
        return False
    thread_id = None if branch == MAIN_BRANCH else int(branch)
    place = Place(key=key, branch=branch, channel_id=int(key.key), thread_id=thread_id)
    channel = client.get_partial_messageable(thread_id or place.channel_id)
    message = await channel.send(INTERRUPTED_NOTICE)
    history = await service.history(key, branch, limit=1)
    if history and history[-1].failed and history[-1].floor == floor:
        view = history[-1]
        # Who wrote the input may retry it (as on a failed turn's notice).
        speakers = frozenset(s.id for s in await service.floor_speakers(key, branch, floor))
        delivered = Delivered(message_ids=[message.id], texts=[INTERRUPTED_NOTICE])
        turns.remember_failed(
            ReplyRecord(place, view.floor, view.page, view.pages, speakers, delivered, failed=True)
        )
    return True
