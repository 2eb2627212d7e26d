"""The Discord front end's settings, as plain values (the composition root builds them from its
configuration; tests build them directly)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from engine.turns.api import ReplyPolicy

DEFAULT_EDIT_INTERVAL_S = 1.0
DEFAULT_EDIT_RATE_PER_S = 20.0  # leaves room under Discord's 50 requests/s per bot
DEFAULT_EDIT_BURST = 20
DEFAULT_DELIVERY_ATTEMPTS = 6
DEFAULT_REDELIVERY_ROUNDS = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscordOptions:
    """How the Discord front end connects and behaves.

    ``api_base`` (``https://host/api/v10``) and ``gateway_url`` (``wss://host/``) point
    discord.py at a REST proxy or a test server. ``channels`` binds channel ids to character
    names at start. Streaming edits share one budget: at most one edit per ``edit_interval_s``
    in a channel and ``edit_rate_per_s`` (bursts of ``edit_burst``) across all channels.

    Sharding: with ``shard_count`` the client is discord.py's ``AutoShardedClient`` serving
    ``shard_ids`` (all of ``0..shard_count-1`` when empty), so that several processes can share
    one bot token, each serving its own shards (the configuration checks the ids). Application
    commands are published by the process holding shard 0 only (see :attr:`syncs_commands`).
    """

    token: str
    api_base: str | None = None
    gateway_url: str | None = None
    game_master_role: str = "Game Master"
    allow_dms: bool = True
    reply_policy: ReplyPolicy = "quiet_period"
    quiet_period_s: float = 8.0
    channels: Mapping[str, str] = field(default_factory=dict)
    members_intent: bool = False
    command_guilds: tuple[int, ...] = ()
    sync_commands: bool = True
    webhook_name: str = "tavernbot"
    edit_interval_s: float = DEFAULT_EDIT_INTERVAL_S
    edit_rate_per_s: float = DEFAULT_EDIT_RATE_PER_S
    edit_burst: int = DEFAULT_EDIT_BURST
    delivery_attempts: int = DEFAULT_DELIVERY_ATTEMPTS
    delivery_backoff_s: float = 0.5
    redelivery_rounds: int = DEFAULT_REDELIVERY_ROUNDS
    redelivery_delay_s: float = 5.0
    guild_ready_timeout_s: float = 2.0
    shard_count: int | None = None
    shard_ids: tuple[int, ...] = ()

    @property
    def sharded(self) -> bool:
        """Whether the client connects as shards of ``shard_count``."""
        return self.shard_count is not None

    @property
    def syncs_commands(self) -> bool:
        """Whether this process publishes the application commands: one process only, the
        one whose shards include shard 0 (where Discord also sends direct messages), so that N
        processes never race to overwrite the same command list."""
        return self.sync_commands and (not self.shard_ids or 0 in self.shard_ids)
