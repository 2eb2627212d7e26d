"""The replies of one turn as they come: one message per speaking character.

A solo turn streams into one message and is delivered when ``respond`` returns. In a group the
service calls ``on_speaker`` before each member's reply and ``on_reply`` once it is committed:
each member then gets a message of its own, posted through the webhook with the member's name,
streamed while it writes and finished (shown and linked to its floor) before the next member
starts, so the messages come in the order the members spoke.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from adapters.discord.stream import ReplyStream
from engine.turns.api import ReplyView

OpenStream = Callable[[str | None], Awaitable[ReplyStream]]
"""Open a stream posting as the named character (None: the session's character)."""
Deliver = Callable[[ReplyStream, ReplyView], Awaitable[None]]
"""Finish a stream with a committed reply: show its final text and link its messages."""


class TurnReplies:
    """The ``on_text``, ``on_speaker`` and ``on_reply`` callbacks of one turn."""

    def __init__(self, *, open_stream: OpenStream, deliver: Deliver) -> None:
        self._open = open_stream
        self._deliver = deliver
        self._stream: ReplyStream | None = None
        self.delivered: list[ReplyView] = []
        """The replies already shown (a group's, in order; a solo turn's stays empty)."""

    async def start(self, name: str | None) -> None:
        """Open the stream of a reply whose speaker is known before it starts (solo)."""
        self._stream = await self._open(name)

    async def stream(self) -> ReplyStream:
        """The stream of the reply in progress (a new one when the last was finished: a
        failure notice must not replace a reply already shown)."""
        if self._stream is None:
            self._stream = await self._open(None)
        return self._stream

    @property
    def first_floor(self) -> int | None:
        """The floor of the turn's first shown reply: the one holding the users' lines."""
        return self.delivered[0].floor if self.delivered else None

    async def on_text(self, text: str) -> None:
        """The reply so far, streamed into the current speaker's message."""
        await (await self.stream()).update(text)

    async def on_speaker(self, name: str) -> None:
        """The next member speaks: its own message, under its own name."""
        self._stream = await self._open(name)

    async def on_reply(self, view: ReplyView) -> None:
        """A member's reply is committed: show it and link it before the next one starts.
        A turn nobody answered (its floor keeps the users' lines) shows nothing."""
        if view.unanswered:
            return
        stream = await self.stream()
        self._stream = None
        self.delivered.append(view)
        await self._deliver(stream, view)
