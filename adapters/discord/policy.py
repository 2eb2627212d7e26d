"""Reply policies: when the lines typed in a place become one floor.

- ``every_message``: each message is its own floor at once.
- ``mention``: lines are collected and become one floor when someone mentions the bot.
- ``quiet_period``: lines are collected until nobody has typed for ``quiet_s`` seconds, then
  all of them become one floor (one ``respond()`` call with every line, each attributed).

Lines may still be edited or withdrawn while they wait. A place never holds more than
``MAX_PENDING_LINES``: reaching it closes the floor early.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field, replace
from typing import Any

from adapters.discord.convert import Place
from adapters.discord.tasks import TaskOwner
from engine.turns.api import ReplyPolicy, UserLine

MAX_PENDING_LINES = 50

Flush = Callable[[Place, list[UserLine]], Coroutine[Any, Any, None]]


@dataclass
class _Pending:
    lines: list[UserLine] = field(default_factory=list)
    timer: asyncio.Task[None] | None = None


def _order(line: UserLine) -> int | None:
    """A line's place in time: its message id (None for a line without one: it goes last)."""
    return int(line.ref) if line.ref is not None and line.ref.isdigit() else None


class Collector:
    """Collects lines per place and hands each finished floor to ``flush``."""

    def __init__(
        self,
        flush: Flush,
        tasks: TaskOwner,
        *,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._flush = flush
        self._tasks = tasks
        self._sleep = sleep
        self._pending: dict[Place, _Pending] = {}

    def pending(self, place: Place) -> list[UserLine]:
        """The lines waiting in ``place``."""
        entry = self._pending.get(place)
        return list(entry.lines) if entry else []

    def add(
        self,
        place: Place,
        line: UserLine,
        *,
        policy: ReplyPolicy,
        quiet_s: float,
        mentioned: bool = False,
    ) -> None:
        """Take one line under ``policy``."""
        entry = self._pending.setdefault(place, _Pending())
        # Handlers of messages that arrived together may finish out of order (each awaits the
        # service): keep the lines in the order people sent them (message ids grow in time).
        order, at = _order(line), len(entry.lines)
        while order is not None and at > 0:
            before = _order(entry.lines[at - 1])
            if before is None or before < order:
                break
            at -= 1
        entry.lines.insert(at, line)
        if (
            policy == "every_message"
            or (policy == "mention" and mentioned)
            or len(entry.lines) >= MAX_PENDING_LINES
        ):
            self._close(place)
        elif policy == "quiet_period":
            if entry.timer is not None:
                entry.timer.cancel()
            entry.timer = self._tasks.spawn(self._after_quiet(place, quiet_s), name="quiet")

    async def _after_quiet(self, place: Place, quiet_s: float) -> None:
        await self._sleep(quiet_s)
        entry = self._pending.get(place)
        if entry is not None and entry.timer is asyncio.current_task():
            entry.timer = None
            self._close(place)

    def _close(self, place: Place) -> None:
        entry = self._pending.pop(place, None)
        if entry is None or not entry.lines:
            return
        if entry.timer is not None and entry.timer is not asyncio.current_task():
            entry.timer.cancel()
        self._tasks.spawn(self._flush(place, entry.lines), name="floor")

    def edit(self, place: Place, ref: str, text: str) -> bool:
        """Replace a waiting line's text; False when it is no longer waiting."""
        entry = self._pending.get(place)
        for index, line in enumerate(entry.lines if entry else []):
            if line.ref == ref:
                assert entry is not None
                entry.lines[index] = replace(line, text=text)
                return True
        return False

    def withdraw(self, place: Place, ref: str) -> bool:
        """Drop a waiting line (its message was deleted); False when it already went."""
        entry = self._pending.get(place)
        if entry is None:
            return False
        kept = [line for line in entry.lines if line.ref != ref]
        found = len(kept) != len(entry.lines)
        entry.lines = kept
        return found

    def flush_all(self) -> None:
        """Close every waiting floor now (used on shutdown and by tests)."""
        for place in list(self._pending):
            self._close(place)
