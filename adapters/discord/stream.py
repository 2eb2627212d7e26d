"""One reply on its way to Discord: streamed by edits within the shared budget, then finished.

The model's text arrives through :meth:`ReplyStream.update` (the service's ``on_text``) as fast
as it likes; a single pump task shows the latest text whenever the :class:`EditBudget` grants a
slot, so intermediate texts are skipped rather than queued. :meth:`ReplyStream.finish` waits for
the pump, then makes the messages show exactly the final text (posting, editing or deleting
pieces) with retries; a piece whose message or webhook disappeared is posted anew.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from adapters.discord.budget import EditBudget
from adapters.discord.outlets import (
    DeliveryError,
    Outlet,
    OutletGoneError,
    with_retries,
)
from adapters.discord.split import split_message
from adapters.discord.tasks import TaskOwner

T = TypeVar("T")
_log = logging.getLogger(__name__)
STREAM_CURSOR = " …"


@dataclass
class Delivered:
    """The messages that show one reply, in order, and what each shows."""

    message_ids: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    webhook_id: int | None = None


class ReplyStream:
    """Streams one reply into a place (see the module docstring)."""

    def __init__(
        self,
        *,
        outlet: Outlet,
        reopen: Callable[[], Awaitable[Outlet]],
        budget: EditBudget,
        budget_key: int,
        tasks: TaskOwner,
        attempts: int,
        backoff_s: float,
        previous: Delivered | None = None,
        on_delete: Callable[[int], None] | None = None,
    ) -> None:
        self.outlet = outlet
        self._reopen = reopen
        self.budget = budget
        self.budget_key = budget_key
        self.tasks = tasks
        self.attempts = attempts
        self.backoff_s = backoff_s
        self._on_delete = on_delete or (lambda _id: None)
        self.shown = Delivered(webhook_id=outlet.webhook_id)
        if previous is not None and previous.webhook_id in (None, outlet.webhook_id):
            # Messages of another webhook (or of the bot) cannot be edited: post anew then.
            self.shown = Delivered(
                message_ids=list(previous.message_ids),
                texts=list(previous.texts),
                webhook_id=outlet.webhook_id,
            )
        self._latest: str | None = None
        self._pump: asyncio.Task[None] | None = None
        self._finishing = False
        self.edits = 0
        self._free_slots = 0
        self._spare_slot = False

    async def update(self, text: str) -> None:
        """The reply so far (``on_text``): shown at the next slot of the budget."""
        self._latest = text
        if not self._finishing and (self._pump is None or self._pump.done()):
            self._pump = self.tasks.spawn(self._run_pump(), name="stream-pump")

    async def _run_pump(self) -> None:
        shown: str | None = None
        while not self._finishing and self._latest is not None and self._latest != shown:
            await self.budget.acquire(self.budget_key)
            if self._finishing:
                # The reply finished while this slot was coming: the final sync uses it.
                self._spare_slot = True
                return
            shown = self._latest
            try:
                await self._sync(shown + STREAM_CURSOR, final=False)
            except (DeliveryError, OutletGoneError) as exc:
                # The final sync retries everything; a lost intermediate edit costs nothing.
                _log.info("streaming edit skipped: %s", exc)

    async def finish(self, text: str) -> Delivered:
        """Show exactly ``text`` (split as needed); raises DeliveryError if Discord refuses."""
        self._finishing = True
        if self._pump is not None:
            await asyncio.gather(self._pump, return_exceptions=True)
        await self._sync(text, final=True)
        return self.shown

    async def _sync(self, text: str, *, final: bool) -> None:
        pieces = split_message(self.outlet.prefix + text)
        shown = self.shown
        # A streaming sync already holds one slot (taken by the pump); every further call,
        # and every call of the final sync, takes its own.
        self._free_slots = 1 if (not final or self._spare_slot) else 0
        self._spare_slot = False
        for index, piece in enumerate(pieces):
            if index < len(shown.message_ids):
                if shown.texts[index] != piece:
                    await self._edit_or_repost(index, piece, final)
            else:
                await self._slot()
                message_id = await self._call(functools.partial(self._send, piece), "send", final)
                shown.message_ids.append(message_id)
                shown.texts.append(piece)
        while final and len(shown.message_ids) > len(pieces):
            message_id = shown.message_ids.pop()
            shown.texts.pop()
            self._on_delete(message_id)
            await self._slot()
            with contextlib.suppress(OutletGoneError):
                await self._call(functools.partial(self._delete, message_id), "delete", True)

    async def _send(self, piece: str) -> int:
        # Looked up at call time: a retry after a recreated webhook uses the new outlet.
        return await self.outlet.send(piece)

    async def _delete(self, message_id: int) -> None:
        await self.outlet.delete(message_id)

    async def _slot(self) -> None:
        if self._free_slots > 0:
            self._free_slots -= 1
        else:
            await self.budget.acquire(self.budget_key)

    async def _edit_or_repost(self, index: int, piece: str, final: bool) -> None:
        shown = self.shown
        message_id = shown.message_ids[index]
        await self._slot()
        try:
            await self._call(lambda: self.outlet.edit(message_id, piece), "edit", final)
            self.edits += 1
        except OutletGoneError:
            if not final:
                raise
            # The message or its webhook is gone: post the piece again (it cannot be edited).
            self.outlet = await self._reopen()
            new_id = await self._call(lambda: self.outlet.send(piece), "repost", True)
            shown.message_ids[index] = new_id
            shown.webhook_id = self.outlet.webhook_id
        shown.texts[index] = piece

    async def _call(self, op: Callable[[], Awaitable[T]], what: str, final: bool) -> T:
        attempts = self.attempts if final else 1
        try:
            return await with_retries(op, what=what, attempts=attempts, backoff_s=self.backoff_s)
        except OutletGoneError:
            if what != "send":
                raise
            # The webhook was deleted: recreate it once and post again.
            self.outlet = await self._reopen()
            self.shown.webhook_id = self.outlet.webhook_id
            return await with_retries(op, what=what, attempts=attempts, backoff_s=self.backoff_s)
