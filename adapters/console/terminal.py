"""The console on a terminal: a line editor with a prompt, history and Ctrl-C that stops a turn.

Used only when standard input is a terminal and the output is not ``--jsonl``; scripts that
pipe lines in keep the plain reader. Lines are read with ``prompt_toolkit`` (arrow keys, Up
recalls earlier lines of this session, Ctrl-L clears the screen) and replies are printed
between prompts, never while one is shown. Ctrl-C during a generation stops that generation
(the program goes on); Ctrl-C twice at the prompt, Ctrl-D or ``/quit`` leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import signal
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from prompt_toolkit import PromptSession
from prompt_toolkit.history import FileHistory, History, InMemoryHistory

from adapters.console.frontend import ConsoleFrontend
from adapters.console.turn_commands import TurnCommands
from engine.turns.api import STOP_TURN

HISTORY_FILE: Final = "console-history-{session}.txt"
"""The file, in the history directory, that keeps one session's typed lines (one per session,
so Up recalls what was typed in this story, not in another)."""
LEAVE_HINT: Final = "Ctrl-C again (or /quit) leaves"
"""Said after a first Ctrl-C at the prompt."""
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def clean_line(text: str) -> str:
    """``text`` without control characters (a tab becomes a space), so a pasted escape
    sequence or a quoted Ctrl key never reaches the chat."""
    return "".join(
        " " if ch == "\t" else ch for ch in text if ch == "\t" or unicodedata.category(ch) != "Cc"
    )


def session_history(directory: Path | None, session: str) -> History:
    """The line history of ``session``: a file in ``directory``, in memory when it is None."""
    if directory is None:
        return InMemoryHistory()
    directory.mkdir(parents=True, exist_ok=True)
    name = HISTORY_FILE.format(session=_UNSAFE_NAME.sub("_", session))
    return FileHistory(str(directory / name))


@dataclass
class TerminalConsole:
    """Reads lines for ``frontend`` on a terminal and plays them, one turn at a time."""

    frontend: ConsoleFrontend
    history: History

    async def _prompt_text(self) -> str:
        info = await self.frontend.service.session_info(self.frontend.key)
        character = ", ".join(info.members) or info.character or "no character"
        return f"{self.frontend.key.key}·{self.frontend.branch}·{character}> "

    async def _play(self, line: str) -> bool:
        """Play one line; Ctrl-C meanwhile stops the turn, not the program."""
        task = asyncio.ensure_future(self.frontend.handle_line(line))
        loop = asyncio.get_running_loop()
        stopped = False

        def stop() -> None:
            nonlocal stopped
            stopped = True
            task.cancel(STOP_TURN)  # the engine keeps what was streamed, if anything was

        installed = False
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGINT, stop)
            installed = True
        try:
            going_on = await task
        except asyncio.CancelledError:
            if not stopped:
                raise
            self.frontend.stopped(kept=False)
            return True
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGINT)
        if stopped:
            self.frontend.stopped(kept=True)
        return going_on

    async def run(self) -> None:
        """Prompt and play until ``/quit``, Ctrl-D, two Ctrl-C in a row at the prompt or
        SIGTERM (which ends the turn in progress, if any, as a cancellation fails it)."""
        loop = asyncio.get_running_loop()
        me = asyncio.current_task()
        terminated = False

        def terminate() -> None:
            nonlocal terminated
            terminated = True
            if me is not None:
                me.cancel()

        installed = False
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, terminate)
            installed = True
        try:
            await self._loop()
        except asyncio.CancelledError:
            if not terminated:
                raise
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGTERM)

    async def _loop(self) -> None:
        self.frontend.thinking = True
        self.frontend.intro()
        await TurnCommands(self.frontend).recap()  # a reopened session: where the player was
        session: PromptSession[str] = PromptSession(history=self.history)
        interrupted = False
        while True:
            draft, self.frontend.draft = self.frontend.draft, ""  # /impersonate's, to edit
            try:
                line = await session.prompt_async(await self._prompt_text(), default=draft)
            except KeyboardInterrupt:
                if interrupted:
                    return
                interrupted = True
                self.frontend._emit("info", message=LEAVE_HINT)
                continue
            except EOFError:
                return
            interrupted = False
            if not await self._play(clean_line(line)):
                return
