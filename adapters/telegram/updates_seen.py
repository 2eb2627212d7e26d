"""Updates shared by several processes: each answered once, each chat's in order.

Several processes may serve one bot behind one webhook URL (or take turns polling). Telegram
retries a webhook delivery it did not see acknowledged, and a new long poller receives again what
the previous one had not confirmed, so the same ``update_id`` can reach two processes.
:class:`SharedUpdates` records every update a process takes in the database before it is handled
(the webhook handler does so before acknowledging it): the first claim wins and any other
process drops the update. Before a chat's update is handled, it waits while an earlier update
of the same chat is still being handled by a live process (its process lease not expired), so
updates delivered alternately to two processes still run in ``update_id`` order. A claim by a
process that died stops blocking once its lease expires. Old claims are pruned after
:data:`UPDATES_KEPT_S`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from datetime import UTC, datetime, timedelta
from typing import Final, Protocol

from adapters.telegram.config import SEEN_UPDATES

log = logging.getLogger("tavernbot.telegram.updates")

UPDATES_KEPT_S: Final = 24 * 3600.0
"""How long a claimed update id is remembered (Telegram stops redelivering well before)."""
PRUNE_INTERVAL_S: Final = 600.0
"""Seconds between two prunings of old claims (by the process that claims)."""
ORDER_POLL_S: Final = 0.05
"""How often an update waiting for an earlier one of its chat asks the database again."""
ORDER_WAIT_MAX_S: Final = 600.0
"""The longest an update waits for an earlier one of its chat before it runs anyway (logged):
a stuck process must not stop a chat for good."""


class UpdateLedger(Protocol):
    """Where the claimed update ids live (the database, shared by every process)."""

    async def claim_update(
        self, bot_id: int, update_id: int, chat_id: int | None, owner: str, now: datetime
    ) -> bool:
        """Record the update as taken by ``owner``; False when it was taken before."""
        ...

    async def earlier_pending(
        self, bot_id: int, chat_id: int, update_id: int, now: datetime
    ) -> bool:
        """Whether an earlier update of the chat is being handled by a live process."""
        ...

    async def finish_update(self, bot_id: int, update_id: int, now: datetime) -> None:
        """Mark the update handled."""
        ...

    async def prune_updates(self, bot_id: int, before: datetime) -> int:
        """Forget updates received before ``before``."""
        ...


def utc_now() -> datetime:
    """The current time, timezone-aware (leases compare it with other processes' times)."""
    return datetime.now(UTC)


class SharedUpdates:
    """This process's side of the shared update ledger (see the module docstring)."""

    def __init__(
        self,
        ledger: UpdateLedger,
        *,
        bot_id: int,
        owner: str,
        poll_s: float = ORDER_POLL_S,
        wait_max_s: float = ORDER_WAIT_MAX_S,
    ) -> None:
        self.ledger = ledger
        self.bot_id = bot_id
        self.owner = owner
        self.poll_s = poll_s
        self.wait_max_s = wait_max_s
        self._mine: OrderedDict[int, None] = OrderedDict()
        self._pruned_at = 0.0

    async def admit(self, update_id: int, chat_id: int | None) -> bool:
        """Claim the update for this process; False when another process took it. An update
        this process claimed already (the webhook handler before the dispatcher) stays its."""
        if update_id in self._mine:
            return True
        now = utc_now()
        if not await self.ledger.claim_update(self.bot_id, update_id, chat_id, self.owner, now):
            return False
        self._mine[update_id] = None
        if len(self._mine) > SEEN_UPDATES:
            self._mine.popitem(last=False)
        if time.monotonic() - self._pruned_at >= PRUNE_INTERVAL_S:
            self._pruned_at = time.monotonic()
            removed = await self.ledger.prune_updates(
                self.bot_id, now - timedelta(seconds=UPDATES_KEPT_S)
            )
            log.debug("pruned %d old update claims", removed)
        return True

    async def wait_turn(self, update_id: int, chat_id: int) -> None:
        """Return once no earlier update of the chat is being handled by a live process (or
        after ``wait_max_s``, with a warning)."""
        deadline = time.monotonic() + self.wait_max_s
        while await self.ledger.earlier_pending(self.bot_id, chat_id, update_id, utc_now()):
            if time.monotonic() >= deadline:
                log.warning(
                    "update %s of chat %s waited %s s for an earlier one; running it now",
                    update_id,
                    chat_id,
                    self.wait_max_s,
                )
                return
            await asyncio.sleep(self.poll_s)

    async def finish(self, update_id: int) -> None:
        """Mark the update handled, so the chat's next update may run in any process."""
        await self.ledger.finish_update(self.bot_id, update_id, utc_now())
