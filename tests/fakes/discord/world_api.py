"""The test side of :class:`~tests.fakes.discord.server.FakeDiscord`: act as users, read results.

Users speak, edit, delete, react, open threads and invoke commands; every action is dispatched
over the gateway exactly as Discord would. ``wait_for`` waits on a condition that the server
signals on every change, so tests never sleep; ``wait_idle`` is for "nothing else happens".
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from tests.fakes.discord.interactions import InteractionRecord
from tests.fakes.discord.world import Channel, User

if TYPE_CHECKING:
    from tests.fakes.discord.server import FakeDiscord

T = TypeVar("T")
WAIT_S = 5.0


class WorldApi:
    """Mixin with the test-facing API (see the module docstring)."""

    # ------------------------------------------------------------------ users act
    async def say(
        self: FakeDiscord,
        channel: Channel,
        user: User,
        content: str,
        *,
        mention_bot: bool = False,
        reply_to: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """``user`` posts ``content`` in ``channel`` (as a Discord reply to the message
        ``reply_to`` when given); returns the message payload."""
        mentions = [self.bot] if mention_bot else []
        if mention_bot:
            content = f"<@{self.bot.id}> {content}"
        reference = None
        if reply_to is not None:
            reference = {"message_id": reply_to["id"], "channel_id": reply_to["channel_id"]}
            if "guild_id" in reply_to:
                reference["guild_id"] = reply_to["guild_id"]
        data = self._message(channel, user, content, mentions=mentions, reference=reference)
        await self.store_and_echo(data)
        return data

    async def edit_by_user(self: FakeDiscord, message: dict[str, Any], content: str) -> None:
        """The author edits their message (MESSAGE_UPDATE)."""
        message["content"] = content
        message["edited_timestamp"] = self.now()
        await self.dispatch("MESSAGE_UPDATE", dict(message))

    async def delete_by_user(self: FakeDiscord, message: dict[str, Any]) -> None:
        """Someone deletes a message (MESSAGE_DELETE)."""
        await self.remove_message(message)

    async def react(self: FakeDiscord, message: dict[str, Any], user: User, emoji: str) -> None:
        """``user`` adds ``emoji`` to ``message`` (MESSAGE_REACTION_ADD)."""
        self.reactions.append((int(message["id"]), emoji, user.id, "add"))
        await self.dispatch("MESSAGE_REACTION_ADD", self.reaction_payload(message, user, emoji))

    async def start_thread(
        self: FakeDiscord,
        channel: Channel,
        user: User,
        name: str,
        *,
        from_message: dict[str, Any] | None = None,
    ) -> Channel:
        """``user`` opens a thread (from a message: the thread takes the message's id)."""
        thread_id = int(from_message["id"]) if from_message is not None else None
        return await self.open_thread(channel, user, name, thread_id=thread_id)

    async def slash(
        self: FakeDiscord,
        channel: Channel,
        user: User,
        line: str,
        *,
        wait_s: float = WAIT_S,
        **values: Any,
    ) -> InteractionRecord:
        """Invoke ``/line`` (``"vars set"``) with ``option=value`` and wait for the answer.

        Attachment options take ``(filename, bytes)``.
        """
        name, *path = line.split()
        guild = self.guild_of(channel)
        definition = self.interactions.find_command(guild, name)
        resolved: dict[str, Any] = {}
        options = self.interactions.build_options(definition, list(path), values, None, resolved)
        data: dict[str, Any] = {
            "id": definition["id"],
            "name": name,
            "type": 1,
            "options": options,
            "resolved": resolved,
        }
        if guild is not None:
            data["guild_id"] = str(guild.id)
        record, body = self.interactions.payload(kind=2, channel=channel, user=user, data=data)
        await self.dispatch("INTERACTION_CREATE", body)
        await asyncio.wait_for(record.done.wait(), wait_s)
        return record

    async def autocomplete(
        self: FakeDiscord,
        channel: Channel,
        user: User,
        line: str,
        *,
        focused: str,
        wait_s: float = WAIT_S,
        **values: Any,
    ) -> list[str]:
        """Ask the bot for choices for option ``focused`` of ``/line``; returns their names."""
        name, *path = line.split()
        guild = self.guild_of(channel)
        definition = self.interactions.find_command(guild, name)
        resolved: dict[str, Any] = {}
        options = self.interactions.build_options(
            definition, list(path), values, focused, resolved
        )
        data: dict[str, Any] = {
            "id": definition["id"],
            "name": name,
            "type": 1,
            "options": options,
        }
        if guild is not None:
            data["guild_id"] = str(guild.id)
        record, body = self.interactions.payload(kind=4, channel=channel, user=user, data=data)
        await self.dispatch("INTERACTION_CREATE", body)
        await asyncio.wait_for(record.done.wait(), wait_s)
        return [c["name"] for c in record.choices or []]

    async def message_command(
        self: FakeDiscord,
        channel: Channel,
        user: User,
        name: str,
        message: dict[str, Any],
        *,
        wait_s: float = WAIT_S,
    ) -> InteractionRecord:
        """Invoke the message context-menu command ``name`` on ``message``."""
        guild = self.guild_of(channel)
        definition = self.interactions.find_command(guild, name, kind=3)
        data: dict[str, Any] = {
            "id": definition["id"],
            "name": name,
            "type": 3,
            "target_id": message["id"],
            "resolved": {"messages": {message["id"]: message}},
        }
        if guild is not None:
            data["guild_id"] = str(guild.id)
        record, body = self.interactions.payload(kind=2, channel=channel, user=user, data=data)
        await self.dispatch("INTERACTION_CREATE", body)
        await asyncio.wait_for(record.done.wait(), wait_s)
        return record

    # ------------------------------------------------------------------ faults
    def fail_next(
        self: FakeDiscord,
        method: str,
        pattern: str,
        *,
        status: int = 429,
        retry_after: float = 0.05,
        times: int = 1,
        code: int = 0,
    ) -> None:
        """The next ``times`` calls ``method`` whose path matches ``pattern`` fail."""
        from tests.fakes.discord.server import Fault

        self.faults.append(Fault(method, re.compile(pattern), status, retry_after, times, code))

    async def drop_gateway(self: FakeDiscord, code: int = 4000) -> None:
        """Close the bot's gateway connection; with 4000 discord.py resumes."""
        await self.gateway.drop(code)

    async def delete_webhook(self: FakeDiscord, webhook_id: int) -> None:
        """Someone deletes a webhook in the channel settings."""
        self.webhooks.pop(webhook_id, None)

    # ------------------------------------------------------------------ reading
    def sent_in(self: FakeDiscord, channel: Channel) -> list[dict[str, Any]]:
        """Messages the bot (or its webhooks) has in ``channel``, oldest first."""
        mine = {str(w.id) for w in self.webhooks.values()} | {str(self.bot.id)}
        return [
            m
            for m in self.messages.values()
            if m["channel_id"] == str(channel.id)
            and (m["author"]["id"] in mine or "webhook_id" in m)
        ]

    def calls_to(self: FakeDiscord, method: str, pattern: str) -> list[Any]:
        """Recorded calls by method and path regex."""
        found = re.compile(pattern)
        return [c for c in self.calls if c.method == method and found.search(c.path)]

    async def wait_for(
        self: FakeDiscord, check: Callable[[], T], wait_s: float = WAIT_S, what: str = ""
    ) -> T:
        """Wait until ``check()`` is truthy (re-checked on every change); returns its value."""
        deadline = time.monotonic() + wait_s
        async with self._changed:
            while True:
                value = check()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out waiting for {what or check}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), min(left, 0.2))

    async def wait_idle(self: FakeDiscord, quiet: float = 0.15, wait_s: float = WAIT_S) -> None:
        """Wait until no REST call is in flight and none came for ``quiet`` seconds."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            idle_for = time.monotonic() - self._last_activity
            if self._in_flight == 0 and idle_for >= quiet:
                return
            await asyncio.sleep(max(0.01, quiet - idle_for))
        raise TimeoutError("the bot never went idle")
