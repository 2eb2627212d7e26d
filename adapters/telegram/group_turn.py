"""One turn's replies on Telegram, solo or group.

The bot has one identity on Telegram, so in a group session each member's reply is its own
message (or messages, past 4096 units) starting with the speaker's name in bold, with its own
◀️ n/m ▶️ 🔄 keyboard. :class:`TurnWriters` gives :meth:`RoleplayService.respond` its callbacks:
``on_speaker`` names the speaker of the reply that starts (a new :class:`ReplyWriter` for each
member after the first), ``on_text`` streams into the current writer and ``on_reply`` finishes
it, with its keyboard, and links it to its floor. A solo turn calls neither ``on_speaker`` nor
``on_reply``: its one writer is finished by the caller with the returned view, as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from adapters.telegram.sender import ReplyWriter
from engine.turns.api import ReplyView

OpenWriter = Callable[[str | None], ReplyWriter]
"""Makes the writer of one reply (its speaker, None: as the chat shows a solo reply)."""
FinishReply = Callable[[ReplyWriter, ReplyView, bool], Awaitable[None]]
"""Shows a committed reply with its keyboard and links it; the flag says whether it is a later
reply of the same turn (the earlier ones keep their keyboards)."""
Label = Callable[[str], Awaitable[str | None]]
"""The name a reply by this speaker starts with (None: no name, as a private solo reply)."""


class TurnWriters:
    """The writers of one turn's replies (see the module docstring)."""

    def __init__(self, open_writer: OpenWriter, finish: FinishReply, label: Label) -> None:
        self._open = open_writer
        self._finish = finish
        self._label = label
        self.writer = open_writer(None)
        self.replies: list[ReplyView] = []
        """The replies of the turn shown so far (group turns; empty for a solo turn)."""
        self.unanswered: ReplyView | None = None
        """The floor of a group turn nobody answered (its lines kept, no reply)."""
        self._done = False  # the current writer shows a finished reply

    async def __aenter__(self) -> TurnWriters:
        await self.writer.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.writer.__aexit__(*exc)

    @property
    def handled(self) -> bool:
        """Whether the callbacks showed the turn (a group turn), so the caller must not."""
        return bool(self.replies) or self.unanswered is not None

    async def on_speaker(self, name: str) -> None:
        """A member's reply starts: the first reuses the turn's writer (typing already shows),
        each later one gets its own messages."""
        label = await self._label(name)
        if self._done:
            self.writer = self._open(label)
            await self.writer.__aenter__()
            self._done = False
        self.writer.speaker = label

    async def on_text(self, text: str) -> None:
        """The current reply's text so far."""
        await self.writer.on_text(text)

    async def on_reply(self, view: ReplyView) -> None:
        """A reply committed: show it with its keyboard (nothing to show when nobody
        answered: the user's lines stay in the story, and the chat stays quiet)."""
        if view.unanswered:
            self.unanswered = view
            await self.writer.__aexit__(None, None, None)
            return
        await self._finish(self.writer, view, bool(self.replies))
        self.replies.append(view)
        self._done = True

    def for_failure(self) -> ReplyWriter:
        """The writer a failure is shown in: the current reply's, or a new one when the
        current writer already shows a finished reply (a later member failed to start)."""
        if self._done:
            self.writer = self._open(None)
            self._done = False
        return self.writer
