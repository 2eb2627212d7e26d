"""Updates a dead process had taken: handled by a live one, never lost.

In webhook mode a process claims an update and Telegram hears back at once (:mod:`.webhook`);
the update is handled afterwards, maybe behind an earlier turn of its chat. If the process is
killed in between, Telegram will not send the update again. Every claim keeps the update's
JSON, so :class:`OrphanSweep`, run every :data:`~.updates_seen.ORPHAN_SWEEP_S` by each live
process, takes over (one process wins each, :meth:`SharedUpdates.take_orphans`) the updates
whose owner's lease expired before they were done, oldest first, and:

- a role-play message whose line is already stored (its floor was opened; the interrupted
  reply was failed and the chat told by the engine's recovery) is marked done;
- a role-play message not stored yet is handled here exactly like a fresh update (the same
  middlewares, per-chat order and finish), after the engine's recovery has failed the dead
  process's turns (else its chat's branch would still look busy);
- anything else (a command, a button press, a reaction, a file) is marked done and logged:
  the dead process may have acted on it already, and acting twice is worse than not at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

from aiogram import Bot, Dispatcher
from aiogram.methods import TelegramMethod
from aiogram.types import Message, Update

from adapters.telegram.convert import session_key, user_line
from adapters.telegram.updates_seen import ORPHAN_SWEEP_S, SharedUpdates
from engine.turns.api import RoleplayService

log = logging.getLogger("tavernbot.telegram.orphans")

Recover = Callable[[], Awaitable[object]]
"""The engine's sweep for dead processes' turns (fails their floors, tells their chats)."""
CLOSE_WAIT_S: Final = 30.0
"""How long :meth:`OrphanSweep.close` waits for the updates it started to be handled."""


def replayable(update: Update) -> Message | None:
    """The role-play message ``update`` carries (text or a caption, not a command, from a
    person), or None: only such a message is handled again for a dead process."""
    message = update.message
    if message is None or user_line(message) is None:
        return None
    if (message.text or "").startswith("/") or (message.from_user and message.from_user.is_bot):
        return None
    return message


class OrphanSweep:
    """This process's sweep for a dead process's updates (see the module docstring)."""

    def __init__(
        self,
        shared: SharedUpdates,
        dispatcher: Dispatcher,
        bot: Bot,
        service: RoleplayService,
        *,
        recover: Recover | None = None,
        interval_s: float = ORPHAN_SWEEP_S,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"the orphan sweep interval must be positive, not {interval_s} s")
        self.shared = shared
        self.dispatcher = dispatcher
        self.bot = bot
        self.service = service
        self.recover = recover
        self.interval_s = interval_s
        self._handling: set[asyncio.Task[None]] = set()
        self._unsettled: dict[int, str] = {}
        """Taken over, but settling it failed (the database hiccuped): tried again first."""

    async def run(self) -> None:
        """:meth:`sweep` every :attr:`interval_s` until cancelled (an owned task)."""
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.sweep()
            except Exception:  # a database hiccup: the next sweep finds the same updates
                log.exception("sweeping for a stopped process's updates failed")

    async def sweep(self) -> list[int]:
        """Take over what dead processes left and settle each update (see the module
        docstring); the ids of the updates started here to be handled again."""
        self._unsettled.update(await self.shared.take_orphans())
        replayed: list[int] = []
        recovered = self.recover is None
        for update_id, payload in sorted(self._unsettled.items()):
            try:
                update = Update.model_validate(
                    self.bot.session.json_loads(payload), context={"bot": self.bot}
                )
            except ValueError:  # not an update this aiogram reads: it must not stop the rest
                await self.shared.finish(update_id)
                del self._unsettled[update_id]
                log.exception("update %s of a stopped process cannot be read; dropped", update_id)
                continue
            message = replayable(update)
            if message is None:
                await self.shared.finish(update_id)
                del self._unsettled[update_id]
                log.warning(
                    "update %s (%s) was taken by a process that stopped; not handled again",
                    update_id,
                    update.event_type,
                )
                continue
            stored = await self.service.resolve_message(
                session_key(message.chat), str(message.message_id)
            )
            if stored is not None:  # its floor was opened: recovery failed and told it
                await self.shared.finish(update_id)
                del self._unsettled[update_id]
                log.info("update %s of a stopped process is on floor %s", update_id, stored.floor)
                continue
            if not recovered and self.recover is not None:
                await self.recover()  # the dead process's turns fail before its chats go on
                recovered = True
            del self._unsettled[update_id]
            log.warning(
                "update %s (chat %s) was taken by a process that stopped; handled here",
                update_id,
                message.chat.id,
            )
            self._start(update)
            replayed.append(update_id)
        return replayed

    def _start(self, update: Update) -> None:
        task = asyncio.get_running_loop().create_task(
            self._feed(update), name=f"telegram-orphan-{update.update_id}"
        )
        self._handling.add(task)
        task.add_done_callback(self._handling.discard)

    async def _feed(self, update: Update) -> None:
        """Handle ``update`` as the webhook handler handles a fresh one."""
        try:
            result: Any = await self.dispatcher.feed_update(self.bot, update)
            if isinstance(result, TelegramMethod):
                await self.dispatcher.silent_call_request(bot=self.bot, result=result)
        except Exception:  # the dispatcher's error handler saw it; keep the task quiet
            log.exception("handling update %s again failed", update.update_id)

    async def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Wait (up to ``wait_s``) for the updates started here, then cancel what is left."""
        tasks = list(self._handling)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=wait_s)
        for task in pending:
            task.cancel()
        for task in pending:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
