"""Date formatting, parsing and humanized durations the way moment.js (``en`` locale) does them,
for ``{{time}}``, ``{{date}}``, ``{{datetimeformat}}``, ``{{timeDiff}}`` and ``{{idleDuration}}``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_DAYS = ("Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_LONG_FORMATS = {
    "LTS": "h:mm:ss A",
    "LT": "h:mm A",
    "LLLL": "dddd, MMMM D, YYYY h:mm A",
    "LLL": "MMMM D, YYYY h:mm A",
    "LL": "MMMM D, YYYY",
    "L": "MM/DD/YYYY",
    "llll": "ddd, MMM D, YYYY h:mm A",
    "lll": "MMM D, YYYY h:mm A",
    "ll": "MMM D, YYYY",
    "l": "M/D/YYYY",
}
_LONG = re.compile(r"\[[^\[]*\]|LTS|LT|LLLL|LLL|LL|L|llll|lll|ll|l")
_TOKEN = re.compile(
    r"\[[^\[]*\]|\\.|Mo|MMMM|MMM|MM|M|DDDo|DDDD|DDD|Do|DD|D|dddd|ddd|dd|do|d|wo|ww|w|Wo|WW|W"
    r"|Qo|Q|YYYYYY|YYYYY|YYYY|YY|Y|gggg|gg|GGGG|GG|e|E|a|A|hh|h|HH|H|kk|k|mm|m|ss|s|S{1,9}"
    r"|x|X|ZZ|Z|zz|z|.",
    re.DOTALL,
)
_UTC_OFFSET = re.compile(r"UTC([+-]\d+)\Z")


@lru_cache(maxsize=64)
def zone(name: str) -> tzinfo:
    """The time zone called ``name`` (UTC when it is unknown)."""
    if not name or name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return UTC


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``11th`` ..."""
    if 11 <= n % 100 <= 13:
        return f"{n}th"
    return f"{n}" + {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _offset(moment: datetime, sep: str) -> str:
    delta = moment.utcoffset() or timedelta(0)
    minutes = int(delta.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    minutes = abs(minutes)
    return f"{sign}{minutes // 60:02d}{sep}{minutes % 60:02d}"


def _locale_week(moment: datetime) -> int:
    """Week of the year in the ``en`` locale (weeks start on Sunday; Jan 1st is in week 1)."""
    jan1 = moment.replace(month=1, day=1)
    offset = (jan1.weekday() + 1) % 7
    return (moment.timetuple().tm_yday + offset - 1) // 7 + 1


def _weekday(moment: datetime) -> int:
    return (moment.weekday() + 1) % 7  # moment: Sunday is 0


def _year(moment: datetime, width: int) -> str:
    year = moment.year
    if width == 6:
        return f"{'+' if year >= 0 else '-'}{abs(year):06d}"
    if width == 5:
        return f"{year:05d}"
    return f"{year:04d}" if year < 10000 else f"+{year}"


_FIELDS: dict[str, Callable[[datetime], str]] = {
    "M": lambda t: str(t.month),
    "Mo": lambda t: ordinal(t.month),
    "MM": lambda t: f"{t.month:02d}",
    "MMM": lambda t: _MONTHS[t.month - 1][:3],
    "MMMM": lambda t: _MONTHS[t.month - 1],
    "Q": lambda t: str((t.month - 1) // 3 + 1),
    "Qo": lambda t: ordinal((t.month - 1) // 3 + 1),
    "D": lambda t: str(t.day),
    "Do": lambda t: ordinal(t.day),
    "DD": lambda t: f"{t.day:02d}",
    "DDD": lambda t: str(t.timetuple().tm_yday),
    "DDDo": lambda t: ordinal(t.timetuple().tm_yday),
    "DDDD": lambda t: f"{t.timetuple().tm_yday:03d}",
    "d": lambda t: str(_weekday(t)),
    "do": lambda t: ordinal(_weekday(t)),
    "dd": lambda t: _DAYS[_weekday(t)][:2],
    "ddd": lambda t: _DAYS[_weekday(t)][:3],
    "dddd": lambda t: _DAYS[_weekday(t)],
    "e": lambda t: str(_weekday(t)),
    "E": lambda t: str(t.isocalendar()[2]),
    "w": lambda t: str(_locale_week(t)),
    "wo": lambda t: ordinal(_locale_week(t)),
    "ww": lambda t: f"{_locale_week(t):02d}",
    "W": lambda t: str(t.isocalendar()[1]),
    "Wo": lambda t: ordinal(t.isocalendar()[1]),
    "WW": lambda t: f"{t.isocalendar()[1]:02d}",
    "gg": lambda t: f"{t.year % 100:02d}",
    "gggg": lambda t: f"{t.year:04d}",
    "GG": lambda t: f"{t.isocalendar()[0] % 100:02d}",
    "GGGG": lambda t: f"{t.isocalendar()[0]:04d}",
    "Y": lambda t: str(t.year),
    "YY": lambda t: f"{t.year % 100:02d}",
    "YYYY": lambda t: _year(t, 4),
    "YYYYY": lambda t: _year(t, 5),
    "YYYYYY": lambda t: _year(t, 6),
    "a": lambda t: "am" if t.hour < 12 else "pm",
    "A": lambda t: "AM" if t.hour < 12 else "PM",
    "H": lambda t: str(t.hour),
    "HH": lambda t: f"{t.hour:02d}",
    "h": lambda t: str(t.hour % 12 or 12),
    "hh": lambda t: f"{t.hour % 12 or 12:02d}",
    "k": lambda t: str(t.hour or 24),
    "kk": lambda t: f"{t.hour or 24:02d}",
    "m": lambda t: str(t.minute),
    "mm": lambda t: f"{t.minute:02d}",
    "s": lambda t: str(t.second),
    "ss": lambda t: f"{t.second:02d}",
    "Z": lambda t: _offset(t, ":"),
    "ZZ": lambda t: _offset(t, ""),
    "z": lambda t: t.tzname() or "",
    "zz": lambda t: t.tzname() or "",
    "X": lambda t: str(int(t.timestamp())),
    "x": lambda t: str(int(t.timestamp() * 1000)),
}


def _token(moment: datetime, tok: str) -> str:
    field = _FIELDS.get(tok)
    if field is not None:
        return field(moment)
    if tok.startswith("["):
        return tok[1:-1]
    if tok.startswith("\\"):
        return tok[1:]
    if tok[0] == "S" and tok == "S" * len(tok):
        return f"{moment.microsecond:06d}000"[: len(tok)]
    return tok


def format_moment(moment: datetime, fmt: str) -> str:
    """``moment.format(fmt)`` (memoised: the clock is frozen per evaluation)."""
    # Equal instants in different zones compare equal, so the key carries the zone too.
    return _format_cached(moment, moment.utcoffset(), moment.tzname(), fmt)


@lru_cache(maxsize=1024)
def _format_cached(
    moment: datetime, offset: timedelta | None, zone_name: str | None, fmt: str
) -> str:
    for _ in range(5):  # long-date tokens expand into ordinary tokens
        expanded = _LONG.sub(lambda m: _LONG_FORMATS.get(m.group(), m.group()), fmt)
        if expanded == fmt:
            break
        fmt = expanded
    return "".join(_token(moment, m.group()) for m in _TOKEN.finditer(fmt))


def utc_offset_time(now: datetime, argument: str) -> datetime | None:
    """``{{time::UTC+2}}``: moment reads ``|n| < 16`` as hours, anything else as minutes."""
    match = _UTC_OFFSET.match(argument)
    if match is None:
        return None
    n = int(match.group(1))
    minutes = n * 60 if abs(n) < 16 else n
    if abs(minutes) >= 24 * 60:
        return None
    return now.astimezone(timezone(timedelta(minutes=minutes)))


def _round(x: float) -> int:
    return math.floor(x + 0.5)


def humanize(milliseconds: float, with_suffix: bool = False) -> str:
    """``moment.duration(ms).humanize(withSuffix)`` in English."""
    span = abs(milliseconds)
    seconds = _round(span / 1000)
    minutes = _round(span / 60000)
    hours = _round(span / 3600000)
    days_exact = span / 86400000
    days = _round(days_exact)
    months = _round(days_exact * 4800 / 146097)
    years = _round(days_exact * 4800 / 146097 / 12)
    if seconds <= 44:
        text = "a few seconds"
    elif seconds < 45:
        text = f"{seconds} seconds"
    elif minutes <= 1:
        text = "a minute"
    elif minutes < 45:
        text = f"{minutes} minutes"
    elif hours <= 1:
        text = "an hour"
    elif hours < 22:
        text = f"{hours} hours"
    elif days <= 1:
        text = "a day"
    elif days < 26:
        text = f"{days} days"
    elif months <= 1:
        text = "a month"
    elif months < 11:
        text = f"{months} months"
    elif years <= 1:
        text = "a year"
    else:
        text = f"{years} years"
    if not with_suffix:
        return text
    return f"in {text}" if milliseconds > 0 else f"{text} ago"


_ISO = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2})(?::(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?)?"
    r"\s*(Z|[+-]\d{2}:?\d{2})?\Z",
    re.IGNORECASE,
)
_LEGACY_FORMATS = ("%B %d, %Y %I:%M%p", "%B %d, %Y %I:%M %p", "%a, %d %b %Y %H:%M:%S %z")


def parse_date(value: object, tz: tzinfo) -> datetime | None:
    """A date from an ISO 8601 string, an RFC 2822 string, SillyTavern's ``send_date`` format or
    epoch milliseconds; local times are read in ``tz``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value / 1000, tz=UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    text = value.strip()
    match = _ISO.match(text)
    if match:
        year, month, day, hour, minute, second, fraction, offset = match.groups()
        try:
            moment = datetime(
                int(year),
                int(month),
                int(day),
                int(hour or 0),
                int(minute or 0),
                int(second or 0),
                int((fraction or "0").ljust(6, "0")[:6]),
            )
        except ValueError:
            return None
        if offset is None:
            return moment.replace(tzinfo=tz)
        if offset.upper() == "Z":
            return moment.replace(tzinfo=UTC)
        sign = 1 if offset[0] == "+" else -1
        digits = offset[1:].replace(":", "")
        delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
        return moment.replace(tzinfo=timezone(sign * delta))
    if text.isdigit():
        return parse_date(int(text), tz)
    for fmt in _LEGACY_FORMATS:
        try:
            parsed = datetime.strptime(text, fmt)
        except ValueError:
            continue
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=tz)
    return None
