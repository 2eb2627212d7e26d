"""The fake Discord's small world model and the JSON payloads built from it.

Everything is plain dictionaries shaped like Discord's API v10 payloads, so the same objects are
served over REST and dispatched over the gateway. Ids are snowflakes from one counter; times are
ISO strings. Permissions are integer bit sets, as Discord sends them (as strings).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import itertools
from dataclasses import dataclass, field
from typing import Any

# Permission bits the bot and the tests care about (Discord's values).
ADMINISTRATOR = 1 << 3
MANAGE_CHANNELS = 1 << 4
MANAGE_GUILD = 1 << 5
ADD_REACTIONS = 1 << 6
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
MANAGE_MESSAGES = 1 << 13
READ_MESSAGE_HISTORY = 1 << 16
MANAGE_WEBHOOKS = 1 << 29
CREATE_PUBLIC_THREADS = 1 << 35
SEND_MESSAGES_IN_THREADS = 1 << 38
MEMBER_DEFAULT = (
    VIEW_CHANNEL
    | SEND_MESSAGES
    | ADD_REACTIONS
    | READ_MESSAGE_HISTORY
    | CREATE_PUBLIC_THREADS
    | SEND_MESSAGES_IN_THREADS
)

# Gateway intents the fake enforces.
INTENT_GUILD_MESSAGE_REACTIONS = 1 << 10
INTENT_MESSAGE_CONTENT = 1 << 15

CHANNEL_TEXT = 0
CHANNEL_DM = 1
CHANNEL_PUBLIC_THREAD = 11

_EPOCH_MS = 1420070400000


def now_iso() -> str:
    """The current time as Discord writes it."""
    return dt.datetime.now(dt.UTC).isoformat()


class Snowflakes:
    """Increasing snowflake ids (time part fixed, so ordering follows creation)."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._counter = itertools.count(1)
        self._base = (start_ms - _EPOCH_MS) << 22

    def next(self) -> int:
        """A fresh id."""
        return self._base + next(self._counter)

    def next_on_shard(self, shard_id: int, shard_count: int) -> int:
        """A fresh id that Discord would put on ``shard_id`` of ``shard_count`` (a guild's
        shard is its id's time part modulo the count, so the time part moves forward)."""
        stamp = self._base >> 22
        stamp += (shard_id - stamp) % shard_count
        return (stamp << 22) + next(self._counter)


@dataclass
class User:
    """A Discord user (a human, the bot, or a webhook's pseudo-user)."""

    id: int
    name: str
    bot: bool = False

    def payload(self) -> dict[str, Any]:
        """The user object."""
        data: dict[str, Any] = {
            "id": str(self.id),
            "username": self.name,
            "global_name": self.name,
            "discriminator": "0",
            "avatar": None,
        }
        if self.bot:
            data["bot"] = True
        return data


@dataclass
class Role:
    """A guild role; the @everyone role has the guild's id."""

    id: int
    name: str
    permissions: int
    position: int = 0

    def payload(self) -> dict[str, Any]:
        """The role object."""
        return {
            "id": str(self.id),
            "name": self.name,
            "permissions": str(self.permissions),
            "position": self.position,
            "color": 0,
            "hoist": False,
            "managed": False,
            "mentionable": False,
            "flags": 0,
        }


@dataclass
class Channel:
    """A text channel, a public thread or a DM channel."""

    id: int
    type: int
    name: str
    guild_id: int | None
    parent_id: int | None = None
    owner_id: int | None = None
    recipient: User | None = None

    def payload(self) -> dict[str, Any]:
        """The channel object."""
        data: dict[str, Any] = {
            "id": str(self.id),
            "type": self.type,
            "name": self.name,
            "position": 0,
            "permission_overwrites": [],
            "nsfw": False,
            "rate_limit_per_user": 0,
            "last_message_id": None,
        }
        if self.guild_id is not None:
            data["guild_id"] = str(self.guild_id)
        if self.parent_id is not None:
            data["parent_id"] = str(self.parent_id)
        if self.type == CHANNEL_PUBLIC_THREAD:
            data["owner_id"] = str(self.owner_id or 0)
            data["message_count"] = 0
            data["member_count"] = 1
            data["thread_metadata"] = {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": now_iso(),
                "locked": False,
            }
        if self.type == CHANNEL_DM and self.recipient is not None:
            data["recipients"] = [self.recipient.payload()]
        return data


@dataclass
class Guild:
    """A guild with its roles, members (user id -> role ids) and channels."""

    id: int
    name: str
    owner_id: int
    roles: dict[int, Role] = field(default_factory=dict)
    members: dict[int, tuple[User, list[int]]] = field(default_factory=dict)
    channels: dict[int, Channel] = field(default_factory=dict)

    def permissions_of(self, user_id: int) -> int:
        """The member's guild-level permissions (no channel overwrites in this fake)."""
        if user_id == self.owner_id:
            return (
                ADMINISTRATOR | MANAGE_GUILD | MANAGE_MESSAGES | MANAGE_WEBHOOKS | MEMBER_DEFAULT
            )
        bits = self.roles[self.id].permissions
        _, role_ids = self.members[user_id]
        for role_id in role_ids:
            bits |= self.roles[role_id].permissions
        return bits

    def member_payload(self, user_id: int, *, with_user: bool = True) -> dict[str, Any]:
        """The guild member object (``permissions`` added for interactions)."""
        user, role_ids = self.members[user_id]
        data: dict[str, Any] = {
            "roles": [str(r) for r in role_ids],
            "joined_at": now_iso(),
            "deaf": False,
            "mute": False,
            "nick": None,
            "flags": 0,
        }
        if with_user:
            data["user"] = user.payload()
        return data

    def payload(self) -> dict[str, Any]:
        """The full GUILD_CREATE payload: channels, threads, roles and members."""
        channels = [c for c in self.channels.values() if c.type != CHANNEL_PUBLIC_THREAD]
        threads = [c for c in self.channels.values() if c.type == CHANNEL_PUBLIC_THREAD]
        return {
            "id": str(self.id),
            "name": self.name,
            "icon": None,
            "owner_id": str(self.owner_id),
            "unavailable": False,
            "large": False,
            "member_count": len(self.members),
            "features": [],
            "emojis": [],
            "stickers": [],
            "roles": [r.payload() for r in self.roles.values()],
            "members": [self.member_payload(uid) for uid in self.members],
            "channels": [c.payload() for c in channels],
            "threads": [c.payload() for c in threads],
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
            "premium_tier": 0,
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "nsfw_level": 0,
            "preferred_locale": "en-US",
            "afk_timeout": 300,
            "joined_at": now_iso(),
        }


@dataclass
class Webhook:
    """A channel webhook owned by the user who created it."""

    id: int
    token: str
    channel_id: int
    guild_id: int | None
    name: str
    owner: User
    app_id: int | None = None
    avatar: str | None = None
    """The avatar as the bot gave it (a ``data:image/...;base64,`` URI), at creation or edit."""

    @property
    def avatar_hash(self) -> str | None:
        """What Discord shows of the avatar: a hash (here of the data URI)."""
        if self.avatar is None:
            return None
        return hashlib.md5(self.avatar.encode(), usedforsecurity=False).hexdigest()

    def avatar_bytes(self) -> bytes | None:
        """The avatar image given, decoded from its data URI."""
        if self.avatar is None:
            return None
        _head, _, data = self.avatar.partition(";base64,")
        return base64.b64decode(data)

    def payload(self) -> dict[str, Any]:
        """The webhook object (type 1, incoming)."""
        return {
            "id": str(self.id),
            "type": 1,
            "token": self.token,
            "channel_id": str(self.channel_id),
            "guild_id": str(self.guild_id) if self.guild_id else None,
            "name": self.name,
            "avatar": self.avatar_hash,
            "application_id": str(self.app_id) if self.app_id else None,
            "user": self.owner.payload(),
        }


def message_payload(
    *,
    message_id: int,
    channel: Channel,
    author: User,
    content: str,
    guild: Guild | None,
    webhook_id: int | None = None,
    reference: dict[str, Any] | None = None,
    flags: int = 0,
    attachments: list[dict[str, Any]] | None = None,
    mentions: list[User] | None = None,
) -> dict[str, Any]:
    """A message object as Discord sends it (with ``member`` for guild human authors)."""
    data: dict[str, Any] = {
        "id": str(message_id),
        "channel_id": str(channel.id),
        "author": author.payload(),
        "content": content,
        "timestamp": now_iso(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": [u.payload() for u in mentions or []],
        "mention_roles": [],
        "attachments": attachments or [],
        "embeds": [],
        "pinned": False,
        "type": 0 if reference is None else 19,
        "flags": flags,
        "components": [],
    }
    if guild is not None:
        data["guild_id"] = str(guild.id)
        if webhook_id is None and author.id in guild.members:
            data["member"] = guild.member_payload(author.id, with_user=False)
    if webhook_id is not None:
        data["webhook_id"] = str(webhook_id)
    if reference is not None:
        data["message_reference"] = reference
    return data
