"""The discord.py client: intents, and event methods that hand over to the adapter's parts."""

from __future__ import annotations

import logging
import sys
from typing import Any, Protocol

import discord
from discord import app_commands

from adapters.discord.events import Events
from adapters.discord.options import DiscordOptions
from adapters.discord.reactions import Reactions
from adapters.discord.tasks import TaskOwner

_log = logging.getLogger(__name__)
MAX_CACHED_MESSAGES = 1_000


def build_intents(options: DiscordOptions) -> discord.Intents:
    """The gateway intents the bot asks for.

    - ``guilds``: channels, threads and roles (bindings, permissions, thread branches);
    - ``guild_messages`` / ``dm_messages``: the lines people type;
    - ``message_content`` (privileged, enable it in the developer portal): without it Discord
      sends empty text except when the bot is mentioned;
    - ``guild_reactions`` / ``dm_reactions``: 🔄 ◀️ ▶️ on replies;
    - ``members`` (privileged, optional): only to resolve display names of members who are
      not in the message payload; everything works without it.
    """
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.dm_messages = True
    intents.message_content = True
    intents.guild_reactions = True
    intents.dm_reactions = True
    intents.members = options.members_intent
    return intents


class Front(Protocol):
    """What the client hands its events to: the runner's public parts (typed here so that
    this module does not import the runner, which builds the client)."""

    @property
    def errors(self) -> list[BaseException]:
        """Errors raised in event and command handlers, kept for the runner's owner."""

    @property
    def tasks(self) -> TaskOwner:
        """The owner of the front end's background tasks."""

    @property
    def events(self) -> Events:
        """Message, edit, delete and thread events."""

    @property
    def reactions(self) -> Reactions:
        """Reactions on replies."""

    async def setup(self) -> None:
        """Before connecting."""

    async def on_ready(self) -> None:
        """Once the gateway is ready."""


class TavernTree(app_commands.CommandTree["TavernClient"]):
    """The command tree: a failed command is logged, kept in the front's errors and answered."""

    async def on_error(
        self,
        interaction: discord.Interaction[TavernClient],
        error: app_commands.AppCommandError,
        /,
    ) -> None:
        _log.error("command failed", exc_info=error)
        self.client.runner.errors.append(error)
        if not interaction.response.is_done():
            await interaction.response.send_message(
                "Something went wrong with that command.", ephemeral=True
            )


class TavernClient(discord.Client):
    """A discord.py client whose events go to a :class:`Front`'s parts (the runner's)."""

    def __init__(self, runner: Front, options: DiscordOptions, **shards: Any) -> None:
        super().__init__(
            intents=build_intents(options),
            guild_ready_timeout=options.guild_ready_timeout_s,
            allowed_mentions=discord.AllowedMentions.none(),
            max_messages=MAX_CACHED_MESSAGES,
            chunk_guilds_at_startup=False,
            **shards,
        )
        self.runner = runner
        self.tree = TavernTree(self)

    async def setup_hook(self) -> None:
        await self.runner.setup()

    async def on_ready(self) -> None:
        await self.runner.on_ready()

    async def on_message(self, message: discord.Message) -> None:
        await self.runner.events.on_message(message)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        await self.runner.events.on_raw_message_edit(payload)

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self.runner.events.on_raw_message_delete(payload)

    async def on_thread_create(self, thread: discord.Thread) -> None:
        await self.runner.events.on_thread_create(thread)

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        # A regeneration takes as long as the model: run it as an owned task, so that close()
        # waits for it or cancels it instead of leaving it to discord.py's event task.
        if not self.runner.tasks.closed:
            self.runner.tasks.spawn(
                self.runner.reactions.on_raw_reaction_add(payload), name="reaction"
            )

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        error = sys.exc_info()[1]
        _log.exception("error in %s", event_method)
        if error is not None:
            self.runner.errors.append(error)


class ShardedTavernClient(TavernClient, discord.AutoShardedClient):
    """:class:`TavernClient` as discord.py's ``AutoShardedClient``: one gateway connection per
    shard of ``options.shard_ids`` (every shard when empty), each receiving the events of the
    guilds Discord puts on it."""

    def __init__(self, runner: Front, options: DiscordOptions) -> None:
        ids = list(options.shard_ids) or None
        super().__init__(runner, options, shard_count=options.shard_count, shard_ids=ids)


def build_client(runner: Front, options: DiscordOptions) -> TavernClient:
    """The client for ``options``: sharded when ``shard_count`` is set, the plain one else."""
    if options.sharded:
        return ShardedTavernClient(runner, options)
    return TavernClient(runner, options)
