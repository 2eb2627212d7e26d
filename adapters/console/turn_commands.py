"""The console's turn commands: ``/history``, ``/dryrun``, ``/tokens``, ``/edit``, ``/del``,
``/continue``, ``/impersonate``, ``/greeting``, ``/stop`` and ``/swipe``, and the hints for a
line that only looks like a command (a space before ``/``, an unknown name).

:class:`TurnCommands` works on a :class:`~adapters.console.frontend.ConsoleFrontend` (its
service, session, branch and output) and talks to the engine only through the
:class:`~engine.turns.api.RoleplayService` calls, as the frontend does.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import TYPE_CHECKING, Final

from adapters.console.asset_commands import console_speaker
from adapters.console.group_commands import GroupReplies
from engine.prompt.dry_run_text import dry_run_text, tokens_text
from engine.timeline.history import MAX_HISTORY
from engine.turns.api import ReplyView, UserLine

if TYPE_CHECKING:
    from adapters.console.frontend import ConsoleFrontend

__all__ = [
    "HISTORY_FLOORS",
    "LITERAL_PREFIXES",
    "REOPEN_FLOORS",
    "TOKENS_PROBE",
    "TurnCommands",
    "command_hint",
    "literal_text",
    "spaced_command_hint",
]

HISTORY_FLOORS: Final = 20
"""Floors ``/history`` shows when no number is given."""
REOPEN_FLOORS: Final = 3
"""Floors shown when the terminal console reopens a session that has some, so the player
sees where they were."""
TOKENS_PROBE: Final = "…"
"""The message ``/tokens`` counts the next prompt with (a dry run needs one): one character,
so the figures are those of the prompt around whatever is typed next."""
LITERAL_PREFIXES: Final = ("//", "\\/")
"""A line starting with one of these is sent to the character without its first character,
so a message may start with a slash."""
GREETINGS_LOCKED: Final = (
    "greetings can only be changed before the first message, while the character's greeting "
    "is floor 1 and the latest floor"
)
HIDDEN_MARK: Final = "‹hidden›"
"""Marks a hidden floor in ``/history`` (``/del``, or a deleted platform message): kept, left
out of the prompts."""
NOTHING_GENERATING: Final = "nothing is generating (Ctrl-C stops a reply while it streams)"
_COMMAND = re.compile(r"/[a-z]+")


def literal_text(text: str) -> str | None:
    """The message a ``//`` or ``\\/`` line sends (its first character dropped), else None."""
    return text[1:] if text.startswith(LITERAL_PREFIXES) else None


def _known(help_text: str) -> list[str]:
    """The command names ``help_text`` lists, in order, each once."""
    return list(dict.fromkeys(_COMMAND.findall(help_text)))


def spaced_command_hint(text: str, help_text: str) -> str | None:
    """The hint for a line of spaces then ``/`` (never sent: it was meant as a command), or
    None for any other line."""
    stripped = text.lstrip()
    if stripped == text or not stripped.startswith("/"):
        return None
    name = stripped.split(maxsplit=1)[0].lower()
    known = _known(help_text)
    meant = name if name in known else _closest(name, known)
    guess = f"did you mean {meant}? " if meant else ""
    return f"{guess}(a line starting with a space before / is not a command; nothing was sent)"


def _closest(name: str, known: list[str]) -> str | None:
    found = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return found[0] if found else None


def command_hint(name: str, help_text: str) -> str:
    """One line for an unknown command: the closest known one, if any is close."""
    meant = _closest(name.lower(), _known(help_text))
    guess = f"; did you mean {meant}?" if meant else ""
    return f"unknown command {name}{guess} (/help lists the commands)"


class TurnCommands:
    """The turn commands of one console (see the module docstring)."""

    def __init__(self, frontend: ConsoleFrontend) -> None:
        self.front = frontend

    async def _latest(self) -> ReplyView | None:
        views = await self.front.service.history(self.front.key, self.front.branch, limit=1)
        return views[-1] if views else None

    def _info(self, message: str, **fields: object) -> None:
        self.front._emit("info", message=message, **fields)

    def _error(self, message: str) -> None:
        self.front._emit("error", message=message)

    # ------------------------------------------------------------------ history
    async def history(self, args: list[str]) -> None:
        """``/history [N]``: the last N floors, both sides; hidden ones marked."""
        if len(args) > 1 or (args and not args[0].isdigit()):
            self._error(f"usage: /history [N] (floors, 1 to {MAX_HISTORY})")
            return
        count = int(args[0]) if args else HISTORY_FLOORS
        if not 1 <= count <= MAX_HISTORY:
            self._error(f"usage: /history [N] (floors, 1 to {MAX_HISTORY})")
            return
        await self.show_floors(count, empty=True)

    async def show_floors(self, count: int, *, empty: bool) -> None:
        """Show the last ``count`` floors; ``empty``: say so when the branch has none."""
        front = self.front
        views = await front.service.history(
            front.key, front.branch, limit=count, include_hidden=True
        )
        if not views:
            if empty:
                self._info(f"no floors yet on branch {front.branch}")
            return
        for view in views:
            if front.jsonl:
                self._emit_floor(view)
            else:
                front.out.write(floor_text(view))
        front.out.flush()

    def _emit_floor(self, view: ReplyView) -> None:
        shown = "failed, no reply" if view.failed else f"{view.page}/{view.pages}"
        # The message keeps its earlier form (the reply, or a failed floor's input); the
        # fields carry both sides.
        self._info(
            f"#{view.floor} ‹{shown}› {view.text}",
            floor=view.floor,
            page=view.page,
            pages=view.pages,
            character=view.character,
            inputs=[{"speaker": name, "text": said} for name, said in view.inputs],
            failed=view.failed,
            error=view.error,
            unanswered=view.unanswered,
            hidden=view.hidden,
        )

    async def recap(self) -> None:
        """On reopening a session: its last :data:`REOPEN_FLOORS` floors, when it has been
        played (a session holding only the greeting it just showed says nothing more)."""
        front = self.front
        views = await front.service.history(front.key, front.branch, limit=REOPEN_FLOORS)
        if any(view.inputs or view.failed for view in views):
            self._info(f"the last floors of branch {front.branch}:")
            await self.show_floors(REOPEN_FLOORS, empty=False)

    # ------------------------------------------------------------------ prompt
    async def dryrun(self, text: str) -> None:
        """``/dryrun [TEXT]``: the readable layout of ``tavernbot prompt dry-run`` (the JSON
        object in ``--jsonl`` mode)."""
        front = self.front
        result = await front.service.dry_run(front.key, front.branch, text)
        if front.jsonl:
            self._info(json.dumps(result, ensure_ascii=False, default=str))
            return
        front.out.write(dry_run_text(result))
        front.out.flush()

    async def tokens(self) -> None:
        """``/tokens``: the next prompt's tokens and the budget, from a dry run."""
        front = self.front
        result = await front.service.dry_run(front.key, front.branch, TOKENS_PROBE)
        budget = dict(result["budget"])
        # the second line under the first, as /info indents its lines
        self._info(tokens_text(budget).replace("\n", "\n  "), budget=budget)

    # ------------------------------------------------------------------ edits
    async def edit(self, rest: str) -> None:
        """``/edit TEXT`` edits your latest message and answers it on a new branch;
        ``/edit N TEXT`` replaces the reply of floor N (a new page; the original stays)."""
        front = self.front
        head, _, tail = rest.strip().partition(" ")
        floor = int(head) if head.isdigit() else None
        text = tail.strip() if floor is not None else rest.strip()
        if not text:
            self._error("usage: /edit TEXT (your latest message) or /edit N TEXT (reply N)")
            return
        latest = await self._latest()
        if latest is None:
            self._info(f"no floors yet on branch {front.branch}")
            return
        if floor is not None:
            view = await front.service.edit_reply(front.key, front.branch, floor, text)
            await GroupReplies.show(front, view)
            self._info(
                f"the reply of floor {floor} is now page {view.page}/{view.pages}; "
                "the original stays a page before it (/swipe <)"
            )
            return
        if latest.failed:
            self._error(
                f"floor {latest.floor} failed; /regen retries it, /edit N TEXT replaces a reply"
            )
            return
        if not latest.inputs:
            self._error(
                f"floor {latest.floor} has no message of yours to edit; /edit {latest.floor} "
                "TEXT replaces its reply"
            )
            return
        before = front.branch
        # The speaker a typed line has, so a persona set with /persona names the edit too.
        line = UserLine(speaker=console_speaker(front.user, front.key), text=text)
        answered: list[ReplyView] = []

        async def call() -> ReplyView:
            view = await front.service.edit_and_regenerate(
                front.key, before, [line], on_text=front._on_text
            )
            answered.append(view)
            return view

        await front._generate(call)
        if answered:
            front.branch = answered[0].branch
            self._info(
                f"edited floor {latest.floor} on a new branch: now on {front.branch} "
                f"(the original stays on {before})"
            )

    async def delete(self, args: list[str]) -> None:
        """``/del [N]``: hide floor N (the latest by default); nothing is deleted."""
        front = self.front
        if len(args) > 1 or (args and not args[0].isdigit()):
            self._error("usage: /del [N] (hide floor N, the latest by default)")
            return
        if args:
            floor = int(args[0])
        else:
            latest = await self._latest()
            if latest is None:
                self._info(f"no floors yet on branch {front.branch}")
                return
            floor = latest.floor
        await front.service.hide_floor(front.key, front.branch, floor)
        self._info(f"floor {floor} hidden: kept (/history marks it), left out of the prompts")

    # ------------------------------------------------------------------ generations
    async def continue_reply(self) -> None:
        """``/continue``: extend the latest reply on a new page, streamed."""
        front = self.front
        await GroupReplies.again(  # in a group, after the speaker's name
            front,
            lambda: front.service.continue_reply(front.key, front.branch, on_text=front._on_text),
        )

    async def impersonate(self) -> None:
        """``/impersonate``: the model writes your next message as a draft; nothing is
        committed. The terminal puts it in the next prompt to send or change; ``--jsonl``
        emits it as a ``draft``."""
        front = self.front
        text = await front.service.impersonate(front.key, front.branch, user_name=front.user)
        if front.jsonl:
            front._emit("draft", text=text)
            return
        if front.thinking:  # a line editor: the next prompt starts with the draft
            front.draft = text
            self._info("draft ready in the prompt: Enter sends it, or change it first")
        else:
            self._info(f"draft (not sent): {text}")

    async def greeting(self, args: list[str]) -> None:
        """``/greeting``: list the greetings; ``/greeting N``: show greeting N (floor 1's
        page N), while floor 1 is the latest floor and nobody has written yet."""
        front = self.front
        if len(args) > 1 or (args and not args[0].isdigit()):
            self._error("usage: /greeting [N]")
            return
        latest = await self._latest()
        if latest is None or latest.floor != 1 or latest.inputs or latest.failed:
            self._info(GREETINGS_LOCKED)
            return
        if not args:
            texts = await front.service.page_texts(front.key, front.branch, 1)
            rows = [
                f"{'*' if n == latest.page else ' '} {n}/{len(texts)} "
                + (text.strip().splitlines() or [""])[0]
                for n, text in enumerate(texts, start=1)
            ]
            self._info("greetings (/greeting N shows one):\n  " + "\n  ".join(rows))
            return
        wanted = int(args[0])
        if not 1 <= wanted <= latest.pages:
            self._error(f"no greeting {wanted}; greetings 1 to {latest.pages}")
            return
        view = await front.service.swipe(front.key, front.branch, wanted - latest.page)
        front._show_reply(view, streamed=False)

    async def swipe(self, args: list[str]) -> None:
        """``/swipe <`` or ``/swipe >`` on the latest floor. On the first page ``<`` says so
        instead of showing it again; on the last page ``>`` shows it again and says so."""
        front = self.front
        step = {"<": -1, ">": 1}.get(args[0] if len(args) == 1 else "", 0)
        if not step:
            self._error("usage: /swipe < or /swipe >")
            return
        latest = await self._latest()
        if latest is not None and not latest.failed and step < 0 and latest.page <= 1:
            self._info(f"already on the first page ({latest.page}/{latest.pages})")
            return
        view = await front.service.swipe(front.key, front.branch, step)
        await GroupReplies.show(front, view)
        if latest is not None and step > 0 and view.page == latest.page:
            # As today, the last page is shown again; SillyTavern would write a new one.
            self._info(f"that is the last page ({view.page}/{view.pages}); /regen writes another")

    def stop(self) -> None:
        """``/stop`` at the prompt: nothing is generating then."""
        self._info(NOTHING_GENERATING)


def floor_text(view: ReplyView) -> str:
    """One floor as ``/history`` shows it on a terminal: each input line with its speaker,
    then the reply with the character's name and its page (or the failure and its error)."""
    lines: list[str] = []
    for index, (name, said) in enumerate(view.inputs):
        prefix = f"#{view.floor} " if index == 0 else " " * (len(str(view.floor)) + 2)
        lines.append(f"{prefix}{name}: {said}")
    indent = " " * (len(str(view.floor)) + 2)
    if view.failed:
        if not lines:
            lines.append(f"#{view.floor}")
        reason = f": {view.error}" if view.error else ""
        lines.append(f"{indent}‹failed, no reply›{reason}")
    elif view.unanswered:  # a group turn nobody answered: the message, no reply
        lines.append(f"{indent}‹nobody answered›")
    else:
        name = view.character or "(hidden)"
        head = (
            f"{indent}{name} ‹{view.page}/{view.pages}›: "
            if lines
            else (f"#{view.floor} {name} ‹{view.page}/{view.pages}›: ")
        )
        lines.append(head + view.text)
    if view.hidden:  # kept in the story's record, out of the prompts
        lines[0] += f" {HIDDEN_MARK}"
    return "\n".join(lines) + "\n"
