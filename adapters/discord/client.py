"""The discord.py client: intents, and event methods that hand over to the adapter's parts."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands

from adapters.discord.options import DiscordOptions

if TYPE_CHECKING:
    from adapters.discord.runner import DiscordRunner

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


class TavernClient(discord.Client):
    """A discord.py client whose events go to a :class:`DiscordRunner`'s parts."""

    def __init__(self, runner: DiscordRunner, options: DiscordOptions) -> None:
        super().__init__(
            intents=build_intents(options),
            guild_ready_timeout=options.guild_ready_timeout_s,
            allowed_mentions=discord.AllowedMentions.none(),
            max_messages=MAX_CACHED_MESSAGES,
            chunk_guilds_at_startup=False,
        )
        self.runner = runner
        self.tree = app_commands.CommandTree(self)
        self.tree.on_error = self._on_command_error  # type: ignore[method-assign]

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

    async def _on_command_error(
        self, interaction: discord.Interaction, error: app_commands.AppCommandError
    ) -> None:
        _log.error("command failed", exc_info=error)
        self.runner.errors.append(error)
        if not interaction.response.is_done():
            await interaction.response.send_message(
                "Something went wrong with that command.", ephemeral=True
            )
