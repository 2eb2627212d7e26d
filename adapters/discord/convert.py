"""discord.py objects -> engine values, at the edge (nothing from discord.py goes further).

A guild channel is the session ``discord/<guild id>/<channel id>``; a thread belongs to its
parent channel's session and is the branch named by its id; a DM is the private session
``discord/dm:<user id>/<channel id>``. Each human is a :class:`Speaker` (their persona's name
when they set one, else their display name) and each message a :class:`UserLine`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import discord

from engine.turns.api import MAIN_BRANCH, SessionKey, Speaker, UserLine

PLATFORM = "discord"


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    """Where something happened: the session, the branch and the channel ids to answer in."""

    key: SessionKey
    branch: str
    channel_id: int
    thread_id: int | None = None

    @property
    def is_thread(self) -> bool:
        """True when the place is a thread (a branch other than the channel's main)."""
        return self.thread_id is not None


def realm_of(guild_id: int | None, user_id: int) -> str:
    """The realm: the guild id, or ``dm:<user id>`` for a private chat."""
    return str(guild_id) if guild_id is not None else f"dm:{user_id}"


def session_key(guild_id: int | None, channel_id: int, user_id: int = 0) -> SessionKey:
    """The session key of a channel (``user_id`` only matters for DMs)."""
    return SessionKey(platform=PLATFORM, realm=realm_of(guild_id, user_id), key=str(channel_id))


def library_key(realm: str) -> SessionKey:
    """The realm's library session: imports made outside a bound channel go through it.

    Its key is not a channel id, so no channel ever plays in it; the files it imports land in
    the realm like any other (cards, presets and world books belong to the realm).
    """
    return SessionKey(platform=PLATFORM, realm=realm, key=f"library:{realm}")


def branch_name(thread_id: int | None) -> str:
    """A thread's branch name is its id; the channel itself is the main branch."""
    return MAIN_BRANCH if thread_id is None else str(thread_id)


def place_of(channel: object, user_id: int) -> Place | None:
    """The place of a channel-like object, or None for channels the bot does not play in."""
    if isinstance(channel, discord.Thread):
        parent_id = channel.parent_id
        return Place(
            key=session_key(channel.guild.id, parent_id),
            branch=branch_name(channel.id),
            channel_id=parent_id,
            thread_id=channel.id,
        )
    if isinstance(channel, discord.TextChannel):
        return Place(
            key=session_key(channel.guild.id, channel.id),
            branch=MAIN_BRANCH,
            channel_id=channel.id,
        )
    if isinstance(channel, discord.DMChannel):
        recipient = channel.recipient.id if channel.recipient is not None else user_id
        return Place(
            key=session_key(None, channel.id, recipient),
            branch=MAIN_BRANCH,
            channel_id=channel.id,
        )
    return None


def speaker_of(user: discord.abc.User, personas: Mapping[str, str] | None = None) -> Speaker:
    """The speaker for ``user``: their persona name when set, else their display name."""
    name = (personas or {}).get(str(user.id)) or user.display_name
    return Speaker(id=str(user.id), name=name)


def line_of(message: discord.Message, personas: Mapping[str, str] | None = None) -> UserLine:
    """One user line from a message (the bot's own mention is removed from the text)."""
    text = message.content
    me = message.guild.me if message.guild is not None else None
    if me is not None:
        text = text.replace(f"<@{me.id}>", "").replace(f"<@!{me.id}>", "").strip()
    return UserLine(speaker=speaker_of(message.author, personas), text=text, ref=str(message.id))
