"""One edit budget shared by every channel: a per-channel interval and a global token bucket.

Each :meth:`EditBudget.acquire` reserves the earliest slot that respects both the channel's
interval (about one edit per second in a channel) and the global rate with its burst (a generic
cell-rate algorithm: the theoretical arrival time advances by ``1 / rate`` per grant). Slots are
reserved synchronously, so waiters are served in order and never overtake one another; with
many channels streaming at once, each channel simply gets fewer edits.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

MAX_TRACKED_CHANNELS = 10_000  # stale per-channel slots are dropped past this


class EditBudget:
    """Shared streaming budget (see the module docstring)."""

    def __init__(
        self,
        *,
        rate_per_s: float,
        burst: int,
        channel_interval_s: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        record: bool = False,
    ) -> None:
        if rate_per_s <= 0 or burst < 1 or channel_interval_s < 0:
            raise ValueError(
                f"edit budget needs rate > 0, burst >= 1, interval >= 0; got "
                f"{rate_per_s}, {burst}, {channel_interval_s}"
            )
        self.rate_per_s = rate_per_s
        self.burst = burst
        self.channel_interval_s = channel_interval_s
        self._clock = clock
        self._sleep = sleep
        self._tat = 0.0
        self._channel_next: dict[int, float] = {}
        self.granted = 0
        self.waited_s = 0.0
        # (channel, slot time) of every grant, for benchmarks; off by default (unbounded).
        self.slots: list[tuple[int, float]] | None = [] if record else None

    def reserve(self, channel_id: int) -> float:
        """Reserve the next slot for ``channel_id``; returns the seconds to wait for it."""
        now = self._clock()
        if len(self._channel_next) > MAX_TRACKED_CHANNELS:
            self._channel_next = {c: t for c, t in self._channel_next.items() if t > now}
        period = 1.0 / self.rate_per_s
        start = max(now, self._channel_next.get(channel_id, now))
        start = max(start, self._tat - (self.burst - 1) * period)
        self._tat = max(self._tat, start) + period
        self._channel_next[channel_id] = start + self.channel_interval_s
        self.granted += 1
        if self.slots is not None:
            self.slots.append((channel_id, start))
        return start - now

    async def acquire(self, channel_id: int) -> None:
        """Wait for the next slot of ``channel_id``."""
        wait = self.reserve(channel_id)
        if wait > 0:
            self.waited_s += wait
            await self._sleep(wait)
