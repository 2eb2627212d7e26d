"""Calling a character by replying to its message.

A user's Discord reply to a character's message calls that character: the floor the user's
line becomes part of is answered by it (``respond(called=...)``), instead of whoever the group's
strategy would choose. :class:`Calls` finds the character a message shows (from the replies the
bot posted in this run, else from the engine's link of the message to its floor) and remembers
the call until the line's floor is played.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Protocol

from adapters.discord.convert import Place
from engine.turns.api import RoleplayService, SessionKey, UserLine

MAX_CALLS = 10_000
"""Calls remembered at once (a line withdrawn before its floor leaves one behind)."""
CALLED_LOOKBACK_FLOORS = 200
"""How far back along its branch a message unknown since the bot started is looked up: a
reply to an older character message calls nobody (the group's strategy decides)."""


class _Place(Protocol):
    @property
    def key(self) -> SessionKey: ...


class ShownReply(Protocol):
    """What a call needs of a reply the bot posted: where, whether it failed, and who spoke."""

    @property
    def place(self) -> _Place: ...
    @property
    def failed(self) -> bool: ...
    @property
    def character(self) -> str: ...


class Calls:
    """The characters users called by replying to their messages (see the module docstring)."""

    def __init__(self, service: RoleplayService, shown: Mapping[int, ShownReply]) -> None:
        self.service = service
        self.shown = shown
        self._called: OrderedDict[str, str] = OrderedDict()

    def note(self, line_ref: str, member: str) -> None:
        """Remember that the user's message ``line_ref`` replies to ``member``'s message."""
        self._called[line_ref] = member
        while len(self._called) > MAX_CALLS:
            self._called.popitem(last=False)

    def take(self, lines: Sequence[UserLine]) -> tuple[str, ...]:
        """The members ``lines`` call, in order, each once (each call is used once)."""
        found = (self._called.pop(line.ref, None) for line in lines if line.ref is not None)
        return tuple(dict.fromkeys(name for name in found if name))

    async def member_of(self, place: Place, message_id: int) -> str | None:
        """The character whose reply message ``message_id`` shows in the session of ``place``
        (None for any other message, a failure notice, or a reply beyond the lookback)."""
        record = self.shown.get(message_id)
        if record is not None:
            same = record.place.key == place.key and not record.failed
            return (record.character or None) if same else None
        ref = await self.service.resolve_message(place.key, str(message_id))
        if ref is None or ref.role != "assistant":
            return None
        views = await self.service.history(place.key, ref.branch, limit=CALLED_LOOKBACK_FLOORS)
        return next((v.character for v in views if v.floor == ref.floor and v.character), None)
