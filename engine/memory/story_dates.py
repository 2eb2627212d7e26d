"""In-story dates on memories (issue 18, time-aware recall).

A role-play keeps its in-story date in a chat variable (``{{setvar::date::8 May 2023}}`` or
``/setvar date 8 May 2023``; the name is configurable, :data:`STORY_DATE_VARIABLE` by default).
The records a turn writes carry the date that variable held when the turn was played
(:attr:`engine.memory.records.MemoryRecord.story_date`, kept as the chat wrote it, at most
:data:`MAX_STORY_DATE_CHARS`); a summary that compacts dated records carries their span.

In the memory block a dated unit reads ``(8 May 2023) ...``, so the model can answer "when"
and "how long ago"; where the date can be read as a calendar day (:func:`parse_story_date`), a
relative phrase in the unit ("yesterday", "last week", "3 days ago", ...) gets the day it
means in brackets: ``yesterday [7 May 2023]``. Only the rendering changes: ranking indexes the
text as stored, so dates never change which memories are chosen.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import date, datetime, timedelta
from functools import lru_cache
from typing import Any, Final

from engine.memory.plan import MutationPlan
from engine.memory.records import MemoryRecord

STORY_DATE_VARIABLE: Final = "date"
"""The chat variable the in-story date is read from unless configured otherwise."""
MAX_STORY_DATE_CHARS: Final = 64
"""A story date longer than this is cut (it is a label, not a text)."""
DATE_CACHE_SIZE: Final = 4096
"""Story dates whose parse is kept (a chat has few distinct dates)."""

DATED_CACHE_SIZE: Final = 16_384
"""Rendered dated units kept between turns (every turn renders the same candidates)."""

_FORMATS = ("%d %B %Y", "%d %b %Y", "%B %d %Y", "%b %d %Y", "%Y-%m-%d", "%d/%m/%Y")
_RELATIVE: Final[tuple[tuple[str, int], ...]] = (
    ("the day before yesterday", -2),
    ("yesterday", -1),
    ("today", 0),
    ("tonight", 0),
    ("this morning", 0),
    ("tomorrow", 1),
    ("last week", -7),
    ("next week", 7),
    ("last month", -30),
    ("last year", -365),
)
_COARSE = {"last month": "%B %Y", "last year": "%Y"}  # a month or a year, not a day
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}
_AGO = re.compile(
    r"\b(\d{1,3}|a|an|one|two|three|four|five|six)\s+(day|week|month|year)s?\s+ago\b",
    re.IGNORECASE,
)
_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_PHRASES = re.compile(
    r"\b(" + "|".join(re.escape(p) for p, _ in _RELATIVE) + r")\b", re.IGNORECASE
)


def story_date_of(state: Mapping[str, Any], name: str = STORY_DATE_VARIABLE) -> str | None:
    """The in-story date a turn was played on: variable ``name`` of the merged variables
    (None when unset or blank), cut to :data:`MAX_STORY_DATE_CHARS`."""
    if not name:
        return None
    value = state.get(name)
    if value is None or isinstance(value, (dict, list)):
        return None
    text = " ".join(str(value).split())
    return text[:MAX_STORY_DATE_CHARS] or None


def span_of(dates: Sequence[str | None]) -> str | None:
    """The story date of a summary of records with these dates: the one date, or the first
    and the last (in the records' order) joined by an en dash; None when none is dated."""
    known = [d for d in dates if d]
    if not known:
        return None
    if known[0] == known[-1]:
        return known[0]
    return f"{known[0]} \u2013 {known[-1]}"[:MAX_STORY_DATE_CHARS]


@lru_cache(maxsize=DATE_CACHE_SIZE)
def parse_story_date(text: str) -> date | None:
    """The calendar day a story date names, when it is written as one: ``8 May 2023``,
    ``8 May, 2023``, ``May 8, 2023``, ``2023-05-08``, ``08/05/2023``, with any time of day
    before ``on`` (``1:56 pm on 8 May, 2023``); None otherwise (dates of a made-up calendar
    stay labels)."""
    day = text.rsplit(" on ", 1)[-1].replace(",", " ")
    day = " ".join(day.split())
    for fmt in _FORMATS:
        try:
            return datetime.strptime(day, fmt).date()
        except ValueError:
            continue
    return None


def format_day(day: date) -> str:
    """``8 May 2023``."""
    return f"{day.day} {day:%B %Y}"


def resolve_relative(text: str, story_date: str | None) -> str:
    """``text`` with each relative day phrase followed by the day it means on
    ``story_date`` (unchanged when the date is not a calendar day)."""
    anchor = parse_story_date(story_date) if story_date else None
    if anchor is None:
        return text

    def fixed(match: re.Match[str]) -> str:
        phrase = match.group(1).lower()
        day = anchor + timedelta(days=dict(_RELATIVE)[phrase])
        shown = day.strftime(_COARSE[phrase]) if phrase in _COARSE else format_day(day)
        return f"{match.group(0)} [{shown}]"

    def ago(match: re.Match[str]) -> str:
        amount = match.group(1).lower()
        count = int(amount) if amount.isdigit() else _WORDS[amount]
        days = count * _UNITS[match.group(2).lower()]
        return f"{match.group(0)} [{format_day(anchor - timedelta(days=days))}]"

    return _AGO.sub(ago, _PHRASES.sub(fixed, text))


@lru_cache(maxsize=DATED_CACHE_SIZE)
def dated(text: str, story_date: str | None) -> str:
    """A unit as the memory block shows it: ``(story date) text`` with relative days
    resolved; ``text`` itself when undated."""
    if not story_date:
        return text
    # A calendar day is shown short ("8 May 2023", a few tokens), whatever the chat wrote.
    day = parse_story_date(story_date)
    label = story_date if day is None else format_day(day)
    return f"({label}) {resolve_relative(text, story_date)}"


def dated_lines(text: str, story_date: str | None) -> str:
    """Each line of ``text`` :func:`dated` (how compaction shows its summariser a dated
    source, so the summary keeps the dates of what it folds)."""
    if not story_date:
        return text
    return "\n".join(
        dated(line, story_date) if line.strip() else line for line in text.splitlines()
    )


def stamped(records: Sequence[MemoryRecord], story_date: str | None) -> tuple[MemoryRecord, ...]:
    """``records`` each carrying ``story_date`` unless it carries one already."""
    if not story_date:
        return tuple(records)
    return tuple(r if r.story_date else replace(r, story_date=story_date) for r in records)


def dated_plan(plan: MutationPlan, story_date: str | None) -> MutationPlan:
    """``plan`` with its new records carrying the turn's in-story date."""
    if not story_date or not plan.new_records:
        return plan
    return replace(plan, new_records=stamped(plan.new_records, story_date))
