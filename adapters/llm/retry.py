"""When and how long to wait before asking the model server again.

The ``openai`` client's own retries are switched off (``max_retries=0``) so that this policy,
which is testable with an injected sleep, is the only one: 429 and 5xx answers (and dropped
connections) are retried up to ``max_retries`` times, waiting what the server's ``Retry-After``
says, else an exponential backoff capped at ``backoff_cap_s``.
"""

from __future__ import annotations

import email.utils
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

DEFAULT_MAX_RETRIES = 3
MAX_RETRIES_LIMIT = 10
"""The most retries a policy may allow (the config accepts 0 to 10)."""
BACKOFF_BASE_S = 0.5
"""The first backoff when the server gives no ``Retry-After``; doubled on each attempt."""
BACKOFF_CAP_S = 8.0
"""No computed backoff waits longer than this."""
RETRY_AFTER_CAP_S = 60.0
"""A ``Retry-After`` longer than this is not waited for: the call fails (retryable) at once."""
JITTER_FRACTION = 0.25
"""Computed backoffs grow by up to this fraction at random, so many clients do not align."""

RETRYABLE_STATUSES = frozenset({408, 409, 429})
"""Client-side statuses worth retrying; every 5xx is retried too."""


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status means "try again later" (429, 408, 409 and every 5xx)."""
    return status in RETRYABLE_STATUSES or 500 <= status <= 599


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``Retry-After``.

    ``Retry-After`` may be a number of seconds or an HTTP date. Returns None when absent or
    unreadable; negative waits become 0.
    """
    lowered = {key.lower(): value for key, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now or datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How many times to retry and how long to wait in between."""

    max_retries: int = DEFAULT_MAX_RETRIES
    backoff_base_s: float = BACKOFF_BASE_S
    backoff_cap_s: float = BACKOFF_CAP_S
    retry_after_cap_s: float = RETRY_AFTER_CAP_S
    jitter_fraction: float = JITTER_FRACTION

    def __post_init__(self) -> None:
        if not 0 <= self.max_retries <= MAX_RETRIES_LIMIT:
            raise ValueError(
                f"max_retries must be between 0 and {MAX_RETRIES_LIMIT}, got {self.max_retries}"
            )

    def delay(self, attempt: int, retry_after: float | None, jitter: float) -> float | None:
        """The wait before retry number ``attempt + 1`` (attempt counts from 0), or None to stop.

        ``retry_after`` is what the server asked for (honoured exactly, up to
        ``retry_after_cap_s``); ``jitter`` is a number in [0, 1) that lengthens computed
        backoffs by up to ``jitter_fraction``.
        """
        if attempt >= self.max_retries:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.retry_after_cap_s else None
        backoff = self.backoff_base_s * float(2**attempt) * (1.0 + self.jitter_fraction * jitter)
        return min(self.backoff_cap_s, backoff)
