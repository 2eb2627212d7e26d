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

Each claim keeps the update itself (its JSON payload): Telegram got its answer when the update
was claimed and never sends it again, so when the claiming process dies before handling it, a
live process takes it over (:meth:`SharedUpdates.take_orphans`, run by the sweep of
:mod:`.orphans`) and handles it in its place.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
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
ORPHAN_SWEEP_S: Final = 2.0
"""Seconds between two sweeps for updates claimed by a process whose lease expired (an update
is handled at most this long after its dead owner's lease ran out)."""
ORPHANS_PER_SWEEP: Final = 100
"""At most this many dead processes' updates are taken over by one sweep (the next sweep takes
the rest)."""

Payload = str | Callable[[], str] | None
"""An update's JSON for its claim, or what makes it (called only when the claim is new)."""


class UpdateLedger(Protocol):
    """Where the claimed update ids live (the database, shared by every process)."""

    async def claim_update(
        self,
        bot_id: int,
        update_id: int,
        chat_id: int | None,
        owner: str,
        now: datetime,
        payload: str | None = None,
    ) -> bool:
        """Record the update (``payload``: its JSON) as taken by ``owner``; False when it was
        taken before."""
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

    async def orphaned_updates(
        self, bot_id: int, owner: str, now: datetime, limit: int
    ) -> list[tuple[int, str, str]]:
        """Updates not done, with a payload, whose owner (not ``owner``) has no live lease:
        ``(update_id, owner, payload)``, oldest first, at most ``limit``."""
        ...

    async def take_update(self, bot_id: int, update_id: int, old_owner: str, owner: str) -> bool:
        """Make ``owner`` the owner of an update ``old_owner`` still holds, not done; False
        when another process took it first."""
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

    async def admit(self, update_id: int, chat_id: int | None, payload: Payload = None) -> bool:
        """Claim the update (kept with ``payload``, its JSON) for this process; False when
        another process took it. An update this process claimed already (the webhook handler
        before the dispatcher, or a take-over) stays its."""
        if update_id in self._mine:
            return True
        now = utc_now()
        data = payload() if callable(payload) else payload
        if not await self.ledger.claim_update(
            self.bot_id, update_id, chat_id, self.owner, now, data
        ):
            return False
        self._remember(update_id)
        if time.monotonic() - self._pruned_at >= PRUNE_INTERVAL_S:
            self._pruned_at = time.monotonic()
            removed = await self.ledger.prune_updates(
                self.bot_id, now - timedelta(seconds=UPDATES_KEPT_S)
            )
            log.debug("pruned %d old update claims", removed)
        return True

    def _remember(self, update_id: int) -> None:
        self._mine[update_id] = None
        if len(self._mine) > SEEN_UPDATES:
            self._mine.popitem(last=False)

    async def take_orphans(self, limit: int = ORPHANS_PER_SWEEP) -> list[tuple[int, str]]:
        """Take over the updates whose owner's lease expired before they were done, oldest
        first: ``(update_id, payload)`` of each this process won (another process sweeping
        at the same time wins the others). Each is this process's from now on, as if it had
        claimed it (:meth:`admit` lets it through)."""
        found = await self.ledger.orphaned_updates(self.bot_id, self.owner, utc_now(), limit)
        taken: list[tuple[int, str]] = []
        for update_id, old_owner, payload in found:
            if await self.ledger.take_update(self.bot_id, update_id, old_owner, self.owner):
                self._remember(update_id)
                taken.append((update_id, payload))
        return taken

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
