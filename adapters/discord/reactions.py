"""Reactions on the latest reply: 🔄 regenerate, ◀️ previous page, ▶️ next page.

Allowed for the speakers of that floor and for members with Manage Messages there; anyone
else's reaction is removed (when the bot may) or ignored. In a group, every member's reply of
the latest turn takes them too: the engine is asked for that reply's floor and changes it
alone, editing its own message. Reactions on older replies (the engine refuses them: a user's
message came after, a thread forked after them...), on messages that are not replies and with
other emoji are ignored. A latest floor whose turn failed has the failure notice for its
reply: 🔄 on the notice, or on the floor's own input, retries it.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import replace

import discord

from adapters.discord.convert import Place, place_of
from adapters.discord.sessions import Sessions
from adapters.discord.stream import Delivered
from adapters.discord.turns import ReplyRecord, Turns
from engine.errors import EngineError
from engine.group.settings import MAX_GROUP_MEMBERS
from engine.turns.api import PlatformRef, RoleplayService

_log = logging.getLogger(__name__)
REGENERATE = "🔄"
PREVIOUS = "◀"
NEXT = "▶"
VARIATION_SELECTOR = "\ufe0f"


def action_of(emoji: str) -> str | None:
    """``regenerate``, ``previous``, ``next`` or None for any other emoji."""
    bare = emoji.replace(VARIATION_SELECTOR, "")
    return {REGENERATE: "regenerate", PREVIOUS: "previous", NEXT: "next"}.get(bare)


class Reactions:
    """Turns reactions into regenerations and swipes (see the module docstring)."""

    def __init__(
        self,
        *,
        client: discord.Client,
        service: RoleplayService,
        sessions: Sessions,
        turns: Turns,
    ) -> None:
        self.client = client
        self.service = service
        self.sessions = sessions
        self.turns = turns
        self.ignored = 0

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        """Handle one added reaction."""
        me = self.client.user
        if me is not None and payload.user_id == me.id:
            return
        action = action_of(str(payload.emoji))
        channel = self.client.get_channel(payload.channel_id)
        if action is None or channel is None:
            return
        place = place_of(channel, payload.user_id)
        if place is None or await self.sessions.binding(place.key) is None:
            return
        record = await self._record(place, payload.message_id)
        standing = None if record is None else await self._standing(record)
        if record is None or standing is None:
            self.ignored += 1
            return
        if not self._allowed(channel, record, payload):
            self.ignored += 1
            await self._remove(channel, payload)
            return
        # An earlier reply: the engine is asked for its floor, and decides (issue 17).
        earlier = None if standing == "latest" else record.floor
        try:
            if action == "regenerate":
                await self.turns.regenerate(record, floor=earlier)
            else:
                await self.turns.swipe(record, -1 if action == "previous" else 1, floor=earlier)
        except EngineError as exc:
            _log.info("reaction %s refused: %s", action, exc)
            if earlier is not None:  # an older reply stays as it was, the reaction too
                self.ignored += 1
                return
        await self._remove(channel, payload)

    async def _record(self, place: Place, message_id: int) -> ReplyRecord | None:
        record = self.turns.by_message.get(message_id)
        if record is not None:
            return record
        # Not seen since the bot started: ask the service what the message shows.
        ref = await self.service.resolve_message(place.key, str(message_id))
        if ref is None:
            return None
        if ref.role == "user":
            return await self._failed_record(place, ref)
        record = ReplyRecord(
            place=replace(place, branch=ref.branch),
            floor=ref.floor,
            page=ref.page or 1,
            pages=ref.page or 1,
            speakers=await self._speakers(place, ref),
            delivered=Delivered(message_ids=[message_id], texts=[""], webhook_id=None),
        )
        self.turns.by_message[message_id] = record
        return record

    async def _failed_record(self, place: Place, ref: PlatformRef) -> ReplyRecord | None:
        """The record of the failed latest floor whose input ``ref`` is (None otherwise): its
        notice when this run showed it, else a fresh record that posts the retry anew."""
        known = self.turns.latest.get((place.key, ref.branch))
        if known is not None and known.failed and known.floor == ref.floor:
            return known
        views = await self.service.history(place.key, ref.branch, limit=1)
        if not views or not views[-1].failed or views[-1].floor != ref.floor:
            return None
        view = views[-1]
        return ReplyRecord(
            place=replace(place, branch=ref.branch),
            floor=ref.floor,
            page=view.page,
            pages=view.pages,
            speakers=await self._speakers(place, ref),
            delivered=Delivered(),
            failed=True,
        )

    async def _speakers(self, place: Place, ref: PlatformRef) -> frozenset[str]:
        """Who spoke on the reply's floor, for a reply from before a restart."""
        speakers = await self.service.floor_speakers(place.key, ref.branch, ref.floor)
        return frozenset(speaker.id for speaker in speakers)

    async def _standing(self, record: ReplyRecord) -> str | None:
        """``latest`` when ``record`` shows the branch's latest floor, ``earlier`` when it
        shows a reply that only other replies follow (a group turn's: the engine is asked
        for its floor and decides), None for an older one. A record from before a restart
        learns its speaker here, so a reposted piece goes out under the right name."""
        place = record.place
        views = await self.service.history(place.key, place.branch, limit=MAX_GROUP_MEMBERS)
        shown = next((v for v in views if v.floor == record.floor), None)
        if shown is None:
            return None
        if not record.character:
            record.character = shown.character
        # The page shown may have changed since the record was kept (a swipe or regenerate
        # through another process, or the console): the database says which it is now.
        if not shown.failed:
            record.page, record.pages = shown.page, shown.pages
        if views[-1].floor == record.floor:
            return "latest"
        after = [v for v in views if v.floor > record.floor]
        if record.failed or shown.failed or any(v.inputs or v.failed for v in after):
            return None
        return "earlier"

    def _allowed(
        self, channel: object, record: ReplyRecord, payload: discord.RawReactionActionEvent
    ) -> bool:
        if str(payload.user_id) in record.speakers:
            return True
        member = payload.member
        if member is None or not isinstance(channel, discord.abc.GuildChannel | discord.Thread):
            # In a DM the only human is the speaker.
            return payload.guild_id is None
        return channel.permissions_for(member).manage_messages

    async def _remove(self, channel: object, payload: discord.RawReactionActionEvent) -> None:
        """Take a user's reaction off again when the bot may (tidy buttons, refused users)."""
        if not isinstance(channel, discord.TextChannel | discord.Thread):
            return
        if not channel.permissions_for(channel.guild.me).manage_messages:
            return
        partial = channel.get_partial_message(payload.message_id)
        with contextlib.suppress(discord.HTTPException):
            await partial.remove_reaction(payload.emoji, discord.Object(payload.user_id))
