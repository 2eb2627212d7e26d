"""SillyTavern chat timestamps: read in SillyTavern's order, written as ST 1.15 writes them.

Read: epoch milliseconds (number or digits), ISO 8601, ``"January 2, 2025 2:20pm"``,
``"2025-9-7@10h38m35s"`` and ``"2025-9-7 @10h 38m 35s 123ms"``. Dates without a zone (all but
epoch and ISO-with-offset) are taken as UTC: ST wrote them in the user's local time, which the
file does not record.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_MONTHS = {
    name: i + 1
    for i, name in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ]
    )  # fmt: skip
}
_MONTH_DAY_YEAR = re.compile(
    r"([A-Za-z]+)\s(\d{1,2}),\s(\d{4})\s(\d{1,2}):(\d{1,2})(am|pm)", re.IGNORECASE
)
_HUMANIZED = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})\s?@\s?(\d{1,2})h\s?(\d{1,2})m\s?(\d{1,2})s(?:\s?(\d{1,3})ms)?"
)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_timestamp(value: object) -> datetime | None:
    """A SillyTavern timestamp as an aware UTC datetime, or None if it is not one."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return _from_epoch_ms(value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.isdigit():
        return _from_epoch_ms(int(text))
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        parsed = None
    if parsed is not None and "-" in text[:8]:
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    found = _MONTH_DAY_YEAR.search(text)
    if found is not None:
        month = _MONTHS.get(found.group(1).lower())
        hour = int(found.group(4)) % 12 + (12 if found.group(6).lower() == "pm" else 0)
        if month is not None:
            return _safe_datetime(
                int(found.group(3)), month, int(found.group(2)), hour, int(found.group(5))
            )
    found = _HUMANIZED.search(text)
    if found is not None:
        y, mo, d, h, mi, s = (int(found.group(i)) for i in range(1, 7))
        ms = int(found.group(7) or 0)
        return _safe_datetime(y, mo, d, h, mi, s, ms * 1000)
    return None


def _from_epoch_ms(value: float) -> datetime | None:
    try:
        return _EPOCH + timedelta(milliseconds=value)
    except (OverflowError, ValueError):
        return None


def _safe_datetime(
    year: int, month: int, day: int, hour: int, minute: int, second: int = 0, micro: int = 0
) -> datetime | None:
    try:
        return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)
    except (ValueError, OverflowError):
        return None


def format_timestamp(value: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and ``Z``, like JavaScript's ``toISOString``."""
    utc = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
