"""Gateway events -> collector, branches and hidden floors.

The bot ignores its own messages, its webhooks' messages and other bots. A human message in a
bound place becomes a line for the reply policy (a Discord reply to a character's message calls
that character: it answers the floor); editing it while it waits changes the line;
deleting it withdraws the line, or, once it is part of a floor, hides what it maps to. A new
thread under a bound channel becomes a branch.
"""

from __future__ import annotations

import logging

import discord

from adapters.discord.convert import Place, line_of, place_of
from adapters.discord.options import DiscordOptions
from adapters.discord.personas import Personas
from adapters.discord.policy import Collector
from adapters.discord.sessions import Sessions
from adapters.discord.turns import Turns
from engine.turns.api import RoleplayService

_log = logging.getLogger(__name__)
PLAYABLE = (discord.MessageType.default, discord.MessageType.reply)


class Events:
    """Handlers for message, edit, delete and thread events."""

    def __init__(
        self,
        *,
        client: discord.Client,
        service: RoleplayService,
        sessions: Sessions,
        turns: Turns,
        collector: Collector,
        personas: Personas,
        options: DiscordOptions,
    ) -> None:
        self.client = client
        self.service = service
        self.sessions = sessions
        self.turns = turns
        self.collector = collector
        self.personas = personas
        self.options = options

    def _is_own_or_bot(self, author_id: int, is_bot: bool, webhook_id: int | None) -> bool:
        me = self.client.user
        return is_bot or webhook_id is not None or (me is not None and author_id == me.id)

    def _place(self, channel_id: int, user_id: int) -> Place | None:
        channel = self.client.get_channel(channel_id)
        return place_of(channel, user_id) if channel is not None else None

    async def on_message(self, message: discord.Message) -> None:
        """A message: a line for the reply policy when it is a human's, in a bound place."""
        if self._is_own_or_bot(message.author.id, message.author.bot, message.webhook_id):
            return
        if message.type not in PLAYABLE or not message.content.strip():
            return
        place = place_of(message.channel, message.author.id)
        if place is None:
            return
        binding = await self.sessions.binding(place.key)
        if binding is None and message.guild is None and self.options.allow_dms:
            binding = await self.sessions.bind(place.key, character=None, policy="every_message")
        if binding is None:
            return
        me = self.client.user
        mentioned = me is not None and any(u.id == me.id for u in message.mentions)
        # The engine names each speaker by their persona when it admits the floor, read from
        # the database (another process may have changed it): nothing to look up here.
        line = line_of(message)
        await self._note_call(place, message, line.ref)
        self.collector.add(
            place,
            line,
            policy=binding.policy,
            quiet_s=self.options.quiet_period_s,
            mentioned=mentioned,
        )

    async def _note_call(
        self, place: Place, message: discord.Message, line_ref: str | None
    ) -> None:
        """A reply to a character's message calls that character for the line's floor."""
        reference = message.reference
        if reference is None or reference.message_id is None or line_ref is None:
            return
        member = await self.turns.calls.member_of(place, reference.message_id)
        if member is not None:
            self.turns.calls.note(line_ref, member)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        """An edited message still waiting for its floor updates the line."""
        data = payload.data
        content = data.get("content")
        author = data.get("author") or {}
        if content is None or author.get("bot") or data.get("webhook_id"):
            return
        place = self._place(payload.channel_id, int(author.get("id") or 0))
        if place is not None:
            self.collector.edit(place, str(payload.message_id), content)

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        """A deleted message: withdraw its waiting line, or hide the floor or page it shows."""
        if payload.message_id in self.turns.self_deleted:
            # The bot removed a piece of its own reply (a shorter page): nothing to hide.
            del self.turns.self_deleted[payload.message_id]
            return
        place = self._place(payload.channel_id, 0)
        if place is None:
            return
        if self.collector.withdraw(place, str(payload.message_id)):
            return
        if await self.sessions.binding(place.key) is None:
            return
        await self.service.hide_message(place.key, str(payload.message_id))

    async def on_thread_create(self, thread: discord.Thread) -> None:
        """A thread under a bound channel becomes a branch."""
        place = place_of(thread, 0)
        if place is None:
            return
        binding = await self.sessions.binding(place.key)
        if binding is not None:
            await self.sessions.ensure_branch(place, binding)
