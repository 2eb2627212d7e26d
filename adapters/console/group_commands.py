"""The console's group commands and the output of a group's turn.

``/members``, ``/add NAME``, ``/remove NAME``, ``/mute NAME``, ``/unmute NAME``, ``/strategy
natural|list|pooled|manual``, ``/mode swap|join`` and ``/speak NAME`` change or play the
session's group through :class:`~engine.turns.api.RoleplayService` (``add_member``,
``remove_member``, ``mute_member``, ``set_group_strategy``, ``set_group_mode``, ``speak``), as
every front end does; the engine checks names and values and says what is wrong in one line.

In a group each member's reply streams on its own: :class:`GroupReplies` writes the speaker's
name before the reply (``Mira: ``) and the reply's page marker after it, and in ``--jsonl``
mode emits one ``reply`` object per reply, carrying its ``character``. A turn nobody answered
(manual strategy) says :data:`NOBODY_ANSWERED`. A solo session prints as it always has.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from engine.group.settings import GENERATION_MODES, STRATEGIES
from engine.turns.api import ReplyView, SessionInfo, UserLine
from engine.turns.members import find_name

if TYPE_CHECKING:
    from adapters.console.frontend import ConsoleFrontend

__all__ = [
    "GROUP_COMMANDS",
    "GROUP_HELP",
    "NOBODY_ANSWERED",
    "GroupCommands",
    "GroupReplies",
    "group_fields",
    "group_line",
    "speaker_label",
]

NOBODY_ANSWERED: Final = "nobody answered; /speak NAME"
"""Said for a group turn no member answered (manual strategy): the message stays a floor."""
GROUP_HELP: Final = (
    "/members, /add NAME, /remove NAME, /mute NAME, /unmute NAME, "
    f"/strategy {'|'.join(STRATEGIES)}, /mode {'|'.join(GENERATION_MODES)}, /speak NAME"
)
"""The group commands as ``/help`` lists them."""
GROUP_COMMANDS: Final = frozenset(
    {"/members", "/add", "/remove", "/mute", "/unmute", "/strategy", "/mode", "/speak"}
)
"""The commands :meth:`GroupCommands.run` answers."""


def speaker_label(name: str) -> str:
    """What precedes a group reply on a terminal: the speaker's name, then the reply on the
    same line (as a chat transcript reads)."""
    return f"{name}: "


def group_line(info: SessionInfo) -> str | None:
    """The group as ``/members`` and ``/info`` say it (None for a solo session): members in
    list order, the muted ones marked, then the strategy and the mode."""
    if not info.members:
        return None
    names = ", ".join(f"{n} (muted)" if n in info.muted else n for n in info.members)
    return f"members: {names}; strategy {info.strategy}, mode {info.group_mode}"


def group_fields(info: SessionInfo) -> dict[str, Any]:
    """The group as ``--jsonl`` lines carry it (empty members and nulls when solo)."""
    return {
        "members": list(info.members),
        "muted": list(info.muted),
        "strategy": info.strategy,
        "mode": info.group_mode,
    }


@dataclass
class GroupReplies:
    """The output of one turn that may be a group's: ``on_speaker`` and ``on_reply`` for
    :meth:`~engine.turns.api.RoleplayService.respond` and ``speak``. ``labelled``: the session
    is a group, so each reply is preceded by its speaker's name; ``shown`` counts the replies
    already shown (the turn's returned view is then not shown again); ``open`` is true while
    a label waits for its reply on the current line."""

    front: ConsoleFrontend
    labelled: bool
    shown: int = 0
    open: bool = False

    @classmethod
    async def respond(cls, front: ConsoleFrontend, line: UserLine) -> None:
        """Play a typed message: the engine's ``respond``, each group reply shown as it
        commits (a solo session's one reply as before)."""
        info = await front.service.session_info(front.key)
        replies = cls(front, labelled=bool(info.members))
        await front._generate(
            lambda: front.service.respond(
                front.key,
                front.branch,
                [line],
                on_text=front._on_text,
                on_speaker=replies.on_speaker,
                on_reply=replies.on_reply,
            ),
            replies=replies,
        )

    @classmethod
    async def again(cls, front: ConsoleFrontend, call: Callable[[], Awaitable[ReplyView]]) -> None:
        """Play ``call`` (``/regen``, ``/continue``) on the latest floor: in a group its new
        page streams after the name of the member whose reply it is."""
        info = await front.service.session_info(front.key)
        replies = cls(front, labelled=bool(info.members))
        latest = await front.service.history(front.key, front.branch, limit=1)
        speaker = latest[-1].character if latest and replies.labelled else ""

        async def labelled() -> ReplyView:
            if speaker:
                await replies.on_speaker(speaker)
            return await call()

        await front._generate(labelled, replies=replies)

    @staticmethod
    async def show(front: ConsoleFrontend, view: ReplyView) -> None:
        """Show a page that is not streamed (``/swipe``, ``/edit N``): in a group after the
        name of the member whose reply it is."""
        if view.character and not front.jsonl:
            info = await front.service.session_info(front.key)
            if info.members:
                front.out.write(speaker_label(view.character))
        front._show_reply(view, streamed=False)

    async def on_speaker(self, name: str) -> None:
        """A member's reply starts: its label, and the stream starts over for it."""
        front = self.front
        front._streamed = 0
        if not self.labelled or front.jsonl:
            return
        front._unmark()
        front.out.write(speaker_label(name))
        front.out.flush()
        self.open = True

    async def on_reply(self, view: ReplyView) -> None:
        """A reply committed: its page marker (and ``reply`` line); an unanswered turn says
        :data:`NOBODY_ANSWERED`."""
        front = self.front
        self.shown += 1
        self.open = False
        front._unmark()
        if view.unanswered:
            front._emit("info", message=NOBODY_ANSWERED, floor=view.floor, unanswered=True)
            return
        front._show_reply(view, streamed=front._streamed > 0)
        front._streamed = 0


class GroupCommands:
    """The group commands of one console (see the module docstring)."""

    def __init__(self, frontend: ConsoleFrontend) -> None:
        self.front = frontend

    async def run(self, command: str, args: list[str]) -> None:
        """Answer ``command`` (one of :data:`GROUP_COMMANDS`, lower case) with ``args``."""
        match command:
            case "/members":
                await self.members()
            case "/add":
                await self.add(args)
            case "/remove":
                await self.remove(args)
            case "/mute" | "/unmute":
                await self.mute(args, muted=command == "/mute")
            case "/strategy":
                await self.strategy(args)
            case "/mode":
                await self.mode(args)
            case "/speak":
                await self.speak(args)

    def _error(self, message: str) -> None:
        self.front._emit("error", message=message)

    def _show(self, message: str, info: SessionInfo) -> None:
        line = group_line(info)
        if line is None:  # one character left: a solo session again
            line = f"session {info.key.key} plays {info.character or 'no character'} alone"
        self.front._emit("info", message=f"{message}; {line}", **group_fields(info))

    async def members(self) -> None:
        """``/members``: the members (muted ones marked), the strategy and the mode."""
        info = await self.front.service.session_info(self.front.key)
        line = group_line(info)
        if line is None:
            line = (
                f"session {info.key.key} plays {info.character or 'no character'} alone; "
                "/add NAME adds a card of the realm as a second character"
            )
        self.front._emit("info", message=line, **group_fields(info))

    async def add(self, args: list[str]) -> None:
        """``/add NAME``: the realm's card NAME joins the group."""
        if not args:
            self._error("usage: /add NAME (a card of the realm; /character lists them)")
            return
        info = await self.front.service.add_member(self.front.key, " ".join(args))
        self._show(f"{info.members[-1] if info.members else info.character} joins", info)

    async def remove(self, args: list[str]) -> None:
        """``/remove NAME``: NAME leaves the group (the last one cannot)."""
        if not args:
            self._error("usage: /remove NAME")
            return
        name = " ".join(args)
        info = await self.front.service.remove_member(self.front.key, name)
        self._show(f"{name} left", info)

    async def mute(self, args: list[str], *, muted: bool) -> None:
        """``/mute NAME`` and ``/unmute NAME``: a muted member speaks only when called."""
        if not args:
            self._error(f"usage: /{'mute' if muted else 'unmute'} NAME")
            return
        name = " ".join(args)
        info = await self.front.service.mute_member(self.front.key, name, muted)
        said = "muted (speaks only with /speak)" if muted else "unmuted"
        self._show(f"{find_name(info.members, name) or name} {said}", info)

    async def strategy(self, args: list[str]) -> None:
        """``/strategy natural|list|pooled|manual``: who answers a message."""
        if len(args) != 1:
            self._error(f"usage: /strategy {'|'.join(STRATEGIES)}")
            return
        info = await self.front.service.set_group_strategy(self.front.key, args[0])
        self._show(f"strategy {info.strategy}", info)

    async def mode(self, args: list[str]) -> None:
        """``/mode swap|join``: only the speaker's card in the prompt, or every member's."""
        if len(args) != 1:
            self._error(f"usage: /mode {'|'.join(GENERATION_MODES)}")
            return
        info = await self.front.service.set_group_mode(self.front.key, args[0])
        self._show(f"mode {info.group_mode}", info)

    async def speak(self, args: list[str]) -> None:
        """``/speak NAME``: NAME answers now, on a new floor (muted or not)."""
        front = self.front
        if not args:
            self._error("usage: /speak NAME")
            return
        info = await front.service.session_info(front.key)
        typed = " ".join(args)
        characters = info.members or ((info.character,) if info.character else ())
        # The label names the member as the engine will (``/speak mira`` is Mira).
        name = find_name(characters, typed)
        if name is None:  # the engine refuses it in one line naming the session's characters
            await front.service.speak(front.key, front.branch, typed)
            return
        replies = GroupReplies(front, labelled=bool(info.members))
        speaker: str = name

        async def call() -> ReplyView:
            await replies.on_speaker(speaker)
            return await front.service.speak(
                front.key, front.branch, speaker, on_text=front._on_text, on_reply=replies.on_reply
            )

        await front._generate(call, replies=replies)
