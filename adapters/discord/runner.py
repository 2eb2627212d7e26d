"""DiscordRunner: builds the Discord front end around a RoleplayService and runs it.

The runner owns the discord.py client, its background tasks and the adapter's parts (sessions,
outlets, the edit budget, the reply collector, turns, reactions, commands). ``api_base`` and
``gateway_url`` point discord.py at a REST proxy or a test server: discord.py builds every REST
URL (webhooks and interaction callbacks included) from ``Route.BASE`` and connects a plain client
to ``DiscordWebSocket.DEFAULT_GATEWAY``, so the runner sets both while it runs and restores them
on close. They are process-wide, so run one redirected runner per process at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Final

import aiohttp
import discord
import discord.gateway
import discord.http
import yarl

from adapters.discord.budget import EditBudget
from adapters.discord.client import build_client
from adapters.discord.commands import CommandDeps, register
from adapters.discord.convert import session_key
from adapters.discord.events import Events
from adapters.discord.interrupted import tell_interrupted
from adapters.discord.options import DiscordOptions
from adapters.discord.outlets import Outlets
from adapters.discord.personas import Personas
from adapters.discord.policy import Collector
from adapters.discord.reactions import Reactions
from adapters.discord.sessions import Sessions
from adapters.discord.tasks import TaskOwner
from adapters.discord.turns import Turns
from engine.errors import ConfigurationError, UnavailableError
from engine.turns.api import RoleplayService, SessionKey

_log = logging.getLogger(__name__)
SHUTDOWN_GRACE_S = 5.0
GATEWAY_PROBE_TIMEOUT_S: Final = 10.0
"""How long start-up waits to open the gateway's WebSocket once before it reports it
unreachable (discord.py itself would retry forever, silently, after a first failure)."""


def point_discordpy_at(api_base: str | None, gateway_url: str | None) -> Callable[[], None]:
    """Redirect discord.py's REST base and gateway; returns the function that undoes it."""
    old_base = discord.http.Route.BASE
    old_gateway = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
    if api_base:
        discord.http.Route.BASE = api_base.rstrip("/")
    if gateway_url:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)

    def restore() -> None:
        discord.http.Route.BASE = old_base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = old_gateway

    return restore


class DiscordRunner:
    """The Discord front end (see the module docstring)."""

    def __init__(self, service: RoleplayService, options: DiscordOptions) -> None:
        if not options.token:
            raise ConfigurationError("[discord] token is empty; set it or DISCORD_TOKEN")
        self.service = service
        self.options = options
        self.errors: list[BaseException] = []
        self.tasks = TaskOwner("discord")
        self._gateway_tasks = TaskOwner("discord-gateway")
        # The bot never joins voice: discord.py's warnings about voice libraries are noise.
        discord.VoiceClient.warn_nacl = False
        discord.VoiceClient.warn_dave = False
        self.client = build_client(self, options)
        self.budget = EditBudget(
            rate_per_s=options.edit_rate_per_s,
            burst=options.edit_burst,
            channel_interval_s=options.edit_interval_s,
        )
        self.sessions = Sessions(service, default_policy=options.reply_policy)
        self.outlets = Outlets(
            self.client, webhook_name=options.webhook_name, pictures=service.character_picture
        )
        self.personas = Personas(service)
        self.turns = Turns(
            client=self.client,
            service=service,
            sessions=self.sessions,
            outlets=self.outlets,
            budget=self.budget,
            tasks=self.tasks,
            options=options,
        )
        self.collector = Collector(self.turns.floor, self.tasks)
        self.events = Events(
            client=self.client,
            service=service,
            sessions=self.sessions,
            turns=self.turns,
            collector=self.collector,
            personas=self.personas,
            options=options,
        )
        self.reactions = Reactions(
            client=self.client, service=service, sessions=self.sessions, turns=self.turns
        )
        register(
            self.client.tree,
            CommandDeps(
                service=service,
                sessions=self.sessions,
                personas=self.personas,
                turns=self.turns,
                game_master_role=options.game_master_role,
            ),
        )
        self._restore: Callable[[], None] | None = None
        self._connection: asyncio.Task[None] | None = None

    async def tell_interrupted(self, key: SessionKey, branch: str, floor: int) -> None:
        """Tell the channel that the reply to floor ``floor`` was interrupted, when this
        process serves its shard (see :mod:`adapters.discord.interrupted`)."""
        await tell_interrupted(
            self.client,
            self.service,
            self.turns,
            self.options,
            key=key,
            branch=branch,
            floor=floor,
        )

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Log in and connect in the background (returns once the login succeeded)."""
        self._restore = point_discordpy_at(self.options.api_base, self.options.gateway_url)
        where = self.options.api_base or discord.http.Route.BASE
        try:
            await self.client.login(self.options.token)
        except discord.LoginFailure as exc:
            await self._abandon()
            raise ConfigurationError(
                f"the Discord token ([discord] token or DISCORD_TOKEN) was refused by {where}: "
                f"{exc}; copy it again from the developer portal's Bot page"
            ) from exc
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            await self._abandon()
            raise UnavailableError(
                f"cannot reach the Discord API at {where} ([discord] api_base): "
                f"{exc or type(exc).__name__}; check the network, or api_base if set"
            ) from exc
        gateway = str(discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY)
        try:
            await self._probe_gateway(gateway)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            await self._abandon()
            reason = str(exc) or f"no answer within {GATEWAY_PROBE_TIMEOUT_S:g}s"
            raise UnavailableError(
                f"cannot reach the Discord gateway at {gateway} ([discord] gateway_url): "
                f"{reason}; check the network, or gateway_url if set"
            ) from exc
        if self.options.shard_count is not None:
            ids = list(self.options.shard_ids) or "all"
            who = "here" if self.options.syncs_commands else "by the process serving shard 0"
            _log.info(
                "serving Discord shards %s of %d; commands synced %s",
                ids,
                self.options.shard_count,
                who,
            )
        self._connection = self._gateway_tasks.spawn(
            self.client.connect(reconnect=True), name="connect"
        )

    async def _probe_gateway(self, url: str) -> None:
        """Open the gateway's WebSocket once and close it (raises when it cannot)."""
        timeout = aiohttp.ClientTimeout(total=GATEWAY_PROBE_TIMEOUT_S)
        async with aiohttp.ClientSession(timeout=timeout) as http, http.ws_connect(url):
            pass

    async def wait_ready(self, wait_s: float) -> None:
        """Wait until the gateway is ready (guilds received)."""
        await asyncio.wait_for(self.client.wait_until_ready(), wait_s)

    async def run(self) -> None:
        """Start and serve until the connection ends or close() is called."""
        await self.start()
        assert self._connection is not None
        try:
            await self._connection
        finally:
            await self.close()

    async def close(self) -> None:
        """Let running turns finish (briefly), then disconnect and cancel every owned task."""
        await self.tasks.drain(SHUTDOWN_GRACE_S)
        await self.client.close()
        if self._connection is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(self._connection), SHUTDOWN_GRACE_S)
        await self.tasks.close()
        await self._gateway_tasks.close()
        self._undo_redirect()

    async def _abandon(self) -> None:
        """After a failed login: close the client's HTTP session and undo the redirect."""
        with contextlib.suppress(Exception):
            await self.client.close()
        self._undo_redirect()

    def _undo_redirect(self) -> None:
        if self._restore is not None:
            self._restore()
            self._restore = None

    # ------------------------------------------------------------------ client hooks
    async def setup(self) -> None:
        """Before connecting: publish the slash commands (one process of a sharded bot only)."""
        if not self.options.syncs_commands:
            return
        tree = self.client.tree
        if self.options.command_guilds:
            for guild_id in self.options.command_guilds:
                guild = discord.Object(guild_id)
                tree.copy_global_to(guild=guild)
                await tree.sync(guild=guild)
        else:
            await tree.sync()

    async def on_ready(self) -> None:
        """Bind the channels named in the config."""
        for channel_id, character in self.options.channels.items():
            channel = self.client.get_channel(int(channel_id))
            if channel is None and self.options.shard_ids:
                # Its guild may be on another process's shards: that process binds it.
                _log.debug("configured channel %s is not on this process's shards", channel_id)
                continue
            if not isinstance(channel, discord.TextChannel):
                _log.warning("configured channel %s is not a text channel I can see", channel_id)
                continue
            key = session_key(channel.guild.id, channel.id)
            await self.sessions.bind(key, character=character or None)
