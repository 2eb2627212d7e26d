"""The terminal chat: lines are messages, ``/commands`` drive swipes, branches and variables.

It reads input line by line (so it can be scripted through a pipe) and talks to the engine only
through :class:`engine.turns.api.RoleplayService`. With ``jsonl=True`` every output is one JSON
object per line (``reply``, ``vars``, ``memories``, ``error``, ``info``, ``draft``) for scripts
and tests; the ``error`` of a failed turn carries ``"retry": "/regen"``, and ``/info`` and
``/set`` carry the session options (``options``, ``items``) under the names ``/set`` takes. The
turn commands (``/history``, ``/edit``, ``/impersonate``...) are in
:mod:`adapters.console.turn_commands`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO, TypeVar, get_args

from adapters.console.asset_commands import AssetCommands, console_speaker
from adapters.console.group_commands import (
    GROUP_COMMANDS,
    GROUP_HELP,
    GroupCommands,
    GroupReplies,
)
from adapters.console.importing import check_kind, guess_kind, imported_text
from adapters.console.session_commands import SessionCommands
from adapters.console.turn_commands import (
    TurnCommands,
    command_hint,
    literal_text,
    spaced_command_hint,
)
from engine.errors import FormatError, GenerationError
from engine.incidents import shown_error
from engine.turns.api import (
    MAIN_BRANCH,
    AssetKind,
    ReplyView,
    RoleplayService,
    Scope,
    SessionKey,
    UserLine,
)

_log = logging.getLogger(__name__)
_Name = TypeVar("_Name", bound=str)
SCOPES: tuple[Scope, ...] = get_args(Scope)
IMPORT_KIND_NAMES: tuple[AssetKind, ...] = get_args(AssetKind)
HELP = (
    "commands: /info, /set [OPTION VALUE] (mode, tools, memory, budget, macros, global_writes; "
    "/set alone lists them), /regen, /swipe < | >, /continue, /edit [N] TEXT (your latest "
    "message, answered on a new branch; with N the reply of floor N, the original kept as a "
    "page), /del [N] (hide a floor, nothing deleted), /impersonate (a draft of your next "
    "message), /greeting [N], /stop, /fork N, /branches, /switch NAME, "
    "/vars [SCOPE], /setvar NAME VALUE [SCOPE], /history [N] (hidden floors marked), "
    "/dryrun [TEXT], /tokens, /import FILE [KIND], /persona [NAME [DESCRIPTION] | off], "
    "/character [NAME], /preset [NAME], /worldbook [add NAME | remove NAME], "
    "/memory [QUERY], /forget ID, "
    f"{GROUP_HELP}, "
    "/note [off | [depth=N] [interval=N] [position=NAME] [role=NAME] TEXT], /help, /quit; "
    "start a message with // or \\/ to send it starting with a slash"
)
RETRY_HINT: Final = "/regen retries it"
"""Added to a failed turn's error line in the terminal: the input is kept, nothing is lost."""
THINKING: Final = "… thinking"
"""Shown on a terminal from the moment a turn starts until its first token replaces it."""
_ERASE_LINE: Final = "\r\x1b[K"
NOT_UTF8 = "that line was not valid UTF-8 (byte {byte}); nothing was sent"
"""Said for an input line whose bytes are not UTF-8; the console then reads the next line."""


@dataclass
class ConsoleFrontend:
    """One console conversation bound to a session; ``branch`` is the branch being played."""

    service: RoleplayService
    key: SessionKey
    user: str = "User"
    out: TextIO = field(default_factory=lambda: sys.stdout)
    jsonl: bool = False
    branch: str = MAIN_BRANCH
    thinking: bool = False
    """Show :data:`THINKING` until the first token (set on a terminal, never in a pipe)."""
    draft: str = ""
    """A draft ``/impersonate`` wrote, for the line editor to start the next prompt with."""
    _streamed: int = 0
    _marker: bool = False

    # ------------------------------------------------------------------ output
    def intro(self) -> None:
        """The first line of an interactive console (none in ``--jsonl`` mode)."""
        if not self.jsonl:
            self._emit("info", message=f"session {self.key.key} on branch {self.branch}; /help")

    def _emit(self, kind: str, **fields: Any) -> None:
        if self.jsonl:
            self.out.write(json.dumps({"type": kind, **fields}, ensure_ascii=False) + "\n")
        elif kind == "reply":
            pass  # already streamed by _on_text; the marker line follows in _show_reply
        elif kind == "vars":
            body = json.dumps(fields["vars"], ensure_ascii=False, indent=2, sort_keys=True)
            self.out.write(f"[{fields['scope']}] {body}\n")
        elif kind == "memories":
            for item in fields["items"]:
                self.out.write(f"  {item['id']} [{item['kind']}/{item['scope']}] {item['text']}\n")
            if not fields["items"]:
                self.out.write("* nothing remembered\n")
        elif kind == "error":
            self.out.write(f"! {fields['message']}\n")
        else:
            self.out.write(f"* {fields['message']}\n")
        self.out.flush()

    def tell_interrupted(self, key: SessionKey, branch: str, floor: int) -> None:
        """Say that floor ``floor`` of ``branch`` lost its reply: the process generating it
        stopped and this process's recovery failed it (nothing when ``key`` is not this
        console's session)."""
        if key != self.key:
            return
        message = f"the reply to floor {floor} on branch {branch} was interrupted"
        if self.jsonl:
            self._emit("error", message=message, retry="/regen")
        else:
            self._emit("error", message=f"{message} ({RETRY_HINT})")

    def _unmark(self) -> None:
        """Erase the thinking marker if it is shown."""
        if self._marker:
            self._marker = False
            self.out.write(_ERASE_LINE)
            self.out.flush()

    async def _on_text(self, text: str) -> None:
        if self.jsonl:
            return
        self._unmark()
        self.out.write(text[self._streamed :])
        self.out.flush()
        self._streamed = len(text)

    def _show_reply(self, view: ReplyView, *, streamed: bool) -> None:
        if not self.jsonl:
            if not streamed:
                self.out.write(view.text)
            self.out.write(f"\n  ‹ {view.page}/{view.pages} › [{view.branch} #{view.floor}]\n")
            self.out.flush()
        self._emit(
            "reply",
            branch=view.branch,
            floor=view.floor,
            page=view.page,
            pages=view.pages,
            text=view.text,
            character=view.character,
        )

    async def _generate(
        self, call: Callable[[], Awaitable[ReplyView]], *, replies: GroupReplies | None = None
    ) -> None:
        """Play one turn. When the model fails (no text, a server error) the error goes where
        the reply would have been: the input stays on its floor (``/history`` shows it as
        failed) and ``/regen`` retries it. ``replies``: a group's turn shows each reply as it
        commits, so the view returned is not shown again."""
        self._streamed = 0
        if self.thinking and not self.jsonl:
            self._marker = True
            self.out.write(THINKING)
            self.out.flush()
        try:
            view = await call()
        except GenerationError as exc:
            self._unmark()
            if (self._streamed or (replies is not None and replies.open)) and not self.jsonl:
                self.out.write("\n")  # the error starts its own line after a partial reply
            message = shown_error(exc, "the turn failed", logger=_log)
            if self.jsonl:
                self._emit("error", message=message, retry="/regen")
            else:
                self._emit("error", message=f"{message} ({RETRY_HINT})")
            return
        self._unmark()
        if replies is None or not replies.shown:
            self._show_reply(view, streamed=self._streamed > 0)

    def stopped(self, *, kept: bool) -> None:
        """Say that the turn in progress was stopped (Ctrl-C): ``kept`` when the text streamed
        until then became the page's reply, else the turn failed (its input stays)."""
        self._unmark()
        if kept and self.draft:  # /impersonate stopped: its draft so far waits in the prompt
            self._emit("info", message="stopped; the draft so far is in the prompt")
            return
        if kept:
            self._emit("info", message="stopped; the reply so far is kept (/regen for another)")
            return
        if self._streamed and not self.jsonl:
            self.out.write("\n")
        self._emit("info", message=f"stopped; nothing was kept ({RETRY_HINT})")

    # ------------------------------------------------------------------ input
    async def handle_line(self, line: str | bytes) -> bool:
        """Handle one input line (text, or bytes to decode as UTF-8); returns False when the
        user asked to quit. A line of bytes that is not UTF-8 is refused with
        :data:`NOT_UTF8` and nothing else happens: guessing at its text (replacement
        characters) would send the model and the history something the user never wrote."""
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                self._emit("error", message=NOT_UTF8.format(byte=exc.start))
                return True
        text = line.rstrip("\r\n")
        if not text.strip():
            return True
        try:
            if (hint := spaced_command_hint(text, HELP)) is not None:
                self._emit("info", message=hint)
                return True
            literal = literal_text(text)  # "//..." or "\\/...": a message starting with "/"
            if literal is None and text.startswith("/"):
                return await self._command(text)
            text = text if literal is None else literal
            line_value = UserLine(speaker=console_speaker(self.user, self.key), text=text)
            await GroupReplies.respond(self, line_value)  # a group's replies, each labelled
        except Exception as exc:  # one line with an error id, never a traceback or raw SQL
            self._emit("error", message=shown_error(exc, "the command failed", logger=_log))
        return True

    async def _command(self, text: str) -> bool:
        head, *rest = text.split(maxsplit=1)
        settings = SessionCommands(self.service, self.key, self._emit, branch=self.branch)
        if head.lower() == "/note":
            # The note's text is taken as typed: quotes and apostrophes are part of it.
            await settings.note(rest[0] if rest else "")
            return True
        assets = AssetCommands(self.service, self.key, self.user, self._emit)
        if head.lower() == "/persona":  # a description is taken as typed
            await assets.persona(rest[0] if rest else "")
            return True
        turns = TurnCommands(self)
        if head.lower() in ("/edit", "/dryrun"):  # their text as typed, like the note's
            typed = rest[0] if rest else ""
            await (turns.edit if head.lower() == "/edit" else turns.dryrun)(typed)
            return True
        try:
            name, *args = shlex.split(text)
        except ValueError as exc:
            self._emit("error", message=f"cannot read command: {exc}")
            return True
        match name.lower():
            case "/quit" | "/exit":
                return False
            case "/help":
                self._emit("info", message=HELP)
            case "/regen" | "/retry":
                await GroupReplies.again(  # in a group, after the speaker's name
                    self,
                    lambda: self.service.regenerate(self.key, self.branch, on_text=self._on_text),
                )
            case "/swipe":
                await turns.swipe(args)
            case "/continue":
                await turns.continue_reply()
            case "/impersonate":
                await turns.impersonate()
            case "/del":
                await turns.delete(args)
            case "/greeting":
                await turns.greeting(args)
            case "/tokens":
                await turns.tokens()
            case "/stop":
                turns.stop()
            case "/character":
                await assets.character(args)
            case "/preset":
                await assets.preset(args)
            case "/worldbook":
                await assets.worldbook(args)
            case "/fork":
                await self._fork(args)
            case "/info":
                await settings.info()
            case "/set":
                await settings.set(args)
            case "/branches":
                info = await self.service.session_info(self.key)
                names = ", ".join(
                    f"{b.name}{'*' if b.name == self.branch else ''} ({b.floors_text})"
                    for b in info.branches
                )
                self._emit("info", message=f"branches: {names}")
            case "/switch":
                await self._switch(args)
            case "/vars":
                await self._vars(args)
            case "/setvar":
                await self._setvar(args)
            case "/history":
                await turns.history(args)
            case "/import":
                await self._import(args)
            case "/memory":
                await self._memory(args)
            case "/forget":
                await self._forget(args)
            case command if command in GROUP_COMMANDS:
                await GroupCommands(self).run(command, args)
            case _:
                self._emit("error", message=command_hint(name, HELP))
        return True

    async def _memory(self, args: list[str]) -> None:
        query = " ".join(args) or None
        found = await self.service.memories(self.key, self.branch, query=query)
        items = [
            {
                "id": m.id,
                "kind": m.kind,
                "scope": m.scope,
                "text": m.text,
                "importance": m.importance,
            }
            for m in found
        ]
        self._emit("memories", query=query, items=items)

    async def _forget(self, args: list[str]) -> None:
        if len(args) != 1:
            self._emit("error", message="usage: /forget ID (the id /memory shows)")
            return
        await self.service.forget_memory(self.key, args[0])
        self._emit("info", message=f"forgot memory {args[0]}")

    async def _fork(self, args: list[str]) -> None:
        if len(args) != 1 or not args[0].isdigit():
            self._emit("error", message="usage: /fork N (branch after floor N)")
            return
        after = int(args[0])
        info = await self.service.session_info(self.key)
        name = f"{self.branch}-{after}"
        taken = {b.name for b in info.branches}
        suffix = 1
        while name in taken:
            suffix += 1
            name = f"{self.branch}-{after}-{suffix}"
        branch = await self.service.fork(self.key, self.branch, after_floor=after, name=name)
        self.branch = branch.name
        self._emit("info", message=f"forked after floor {after}: now on branch {branch.name}")

    async def _switch(self, args: list[str]) -> None:
        if len(args) != 1:
            self._emit("error", message="usage: /switch NAME")
            return
        info = await self.service.session_info(self.key)
        if args[0] not in {b.name for b in info.branches}:
            self._emit("error", message=f"no branch named {args[0]!r}")
            return
        self.branch = args[0]
        self._emit("info", message=f"now on branch {self.branch}")

    async def _vars(self, args: list[str]) -> None:
        scope = _named(SCOPES, args[0]) if args else None
        if args and scope is None:
            self._emit(
                "error", message=f"unknown scope {args[0]!r}; use one of {', '.join(SCOPES)}"
            )
            return
        values = await self.service.variables(self.key, self.branch, scope)
        self._emit("vars", scope=scope or "effective", vars=values)

    async def _setvar(self, args: list[str]) -> None:
        if len(args) not in (2, 3):
            self._emit("error", message="usage: /setvar NAME VALUE [SCOPE]")
            return
        scope = _named(SCOPES, args[2]) if len(args) == 3 else "chat"
        if scope is None:
            self._emit(
                "error", message=f"unknown scope {args[2]!r}; use one of {', '.join(SCOPES)}"
            )
            return
        await self.service.set_variable(self.key, self.branch, args[0], args[1], scope)
        self._emit("info", message=f"set {scope} variable {args[0]} = {args[1]}")

    async def _import(self, args: list[str]) -> None:
        if len(args) not in (1, 2):
            self._emit(
                "error", message="usage: /import FILE [card|preset|worldbook|regex|chat|group]"
            )
            return
        path = Path(args[0])
        try:
            data = await asyncio.to_thread(path.read_bytes)
        except OSError as exc:
            self._emit("error", message=f"cannot read {path}: {exc.strerror}")
            return
        kind = _named(IMPORT_KIND_NAMES, args[1]) if len(args) == 2 else guess_kind(path, data)
        if kind is None:
            # The same line the turn service gives for a kind it does not know.
            raise FormatError(f"unknown import kind {args[1]!r}", source=path.name)
        check_kind(path, data, kind)
        summary = await self.service.import_asset(self.key, kind, path.name, data)
        self._emit("info", message=imported_text(path, summary), **summary.details)

    async def run(self, lines: AsyncIterator[str | bytes]) -> None:
        """Play until the input ends or ``/quit`` (lines as text or as undecoded bytes)."""
        self.intro()
        async for line in lines:
            if not await self.handle_line(line):
                break


def _named(names: tuple[_Name, ...], text: str) -> _Name | None:
    """The member of ``names`` spelled ``text`` (typed as the names are), None if none is."""
    return next((name for name in names if name == text), None)
