"""The wall clock: the one :class:`~engine.ports.Clock` production code uses (tests pass a
frozen or stepped clock instead)."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["SystemClock"]


class SystemClock:
    """The wall clock, in UTC."""

    def now(self) -> datetime:
        """The current instant."""
        return datetime.now(UTC)
