"""Retrievable units: the whole pieces of a record that injection takes or leaves.

A record's text is stored as one unit per line (:func:`unit_text`, applied when a record is
written): a line is a fact, an observation or a summary's item, and a line longer than
:data:`MAX_UNIT_CHARS` is split at sentence ends (then, for a run-on sentence, at word
boundaries) into several lines, so nothing is lost and no unit is large. Injection ranks and
packs units (:func:`units_of`), each carrying its record's floors and time, so a unit is in the
memory block whole or not at all; a record is never cut mid-text to fit.

Splitting at read time uses the same rule, so records written before units existed (and
summaries written by compaction) are read as units too.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Final

from engine.memory.records import MemoryKind, MemoryRecord
from engine.memory.story_dates import dated

MAX_UNIT_CHARS = 400  # a retrievable unit is at most this long (a few sentences, one fact)
MIN_WORD_SPLIT_CHARS = 80  # a run-on sentence is split at a space no earlier than this

# A sentence ends at . ! ? (and CJK 。！？) followed by space, or right after CJK punctuation.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])")
_CJK_ENDS = ("。", "！", "？")  # CJK sentences join without a space


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryUnit:
    """One line of a record: injected whole or not at all.

    ``floor_start``/``floor_end`` place it in the story (a fact's or micro's own floor; a
    compacted summary's coverage), ``created_at`` is its record's time.
    """

    record: MemoryRecord
    index: int
    text: str
    floor_start: int
    floor_end: int
    created_at: datetime

    @property
    def id(self) -> str:
        """``record-id#index``: stable while the record's text does not change."""
        return f"{self.record.id}#{self.index}"

    @property
    def display(self) -> str:
        """The unit as shown in a memory block: a fact's units each carry the fact's key."""
        record = self.record
        if record.kind is MemoryKind.FACT and record.key:
            return f"{record.key}: {self.text}"
        return self.text

    @property
    def shown(self) -> str:
        """The unit as the memory block renders it: :attr:`display` after its record's
        in-story date, relative days resolved (:func:`engine.memory.story_dates.dated`)."""
        return dated(self.display, self.record.story_date)


def _split_long(line: str, max_chars: int) -> list[str]:
    """Sentences of ``line`` grouped greedily into pieces of at most ``max_chars``."""
    pieces: list[str] = []
    current = ""
    for sentence in (s.strip() for s in _SENTENCE_END.split(line)):
        if not sentence:
            continue
        for part in _split_run_on(sentence, max_chars):
            seam = "" if not current or current.endswith(_CJK_ENDS) else " "
            joined = f"{current}{seam}{part}"
            if len(joined) <= max_chars:
                current = joined
                continue
            if current:
                pieces.append(current)
            current = part
    if current:
        pieces.append(current)
    return pieces


def _split_run_on(sentence: str, max_chars: int) -> list[str]:
    """A sentence longer than ``max_chars`` split at spaces; one with no usable space stays
    whole (the renderer cuts such a unit, with a warning)."""
    parts: list[str] = []
    rest = sentence
    while len(rest) > max_chars:
        cut = rest.rfind(" ", MIN_WORD_SPLIT_CHARS, max_chars + 1)
        if cut < 0:
            break
        parts.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    parts.append(rest)
    return parts


UNIT_CACHE_SIZE: Final = 16_384
"""Record texts whose split is kept between calls: every turn reads the same records' units
again, and the split depends only on the text and the limit."""


def split_units(text: str, *, max_chars: int = MAX_UNIT_CHARS) -> tuple[str, ...]:
    """The units of ``text``: its non-empty lines, a long line split at sentence ends."""
    return _split(text, max_chars)


@lru_cache(maxsize=UNIT_CACHE_SIZE)
def _split(text: str, max_chars: int) -> tuple[str, ...]:
    units: list[str] = []
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if not line:
            continue
        if len(line) <= max_chars:
            units.append(line)
        else:
            units.extend(_split_long(line, max_chars))
    return tuple(units)


def unit_text(text: str, *, max_chars: int = MAX_UNIT_CHARS) -> str:
    """``text`` in its stored form: one unit per line (what a record keeps when written)."""
    return "\n".join(split_units(text, max_chars=max_chars))


def units_of(record: MemoryRecord, *, max_chars: int = MAX_UNIT_CHARS) -> tuple[MemoryUnit, ...]:
    """The record's units, each with the record's floors and time."""
    start = record.coverage_start if record.coverage_start is not None else record.created_floor
    end = record.coverage_end if record.coverage_end is not None else record.created_floor
    return tuple(
        MemoryUnit(
            record=record,
            index=index,
            text=text,
            floor_start=start,
            floor_end=end,
            created_at=record.created_at,
        )
        for index, text in enumerate(split_units(record.text, max_chars=max_chars))
    )


RECORD_UNITS_CACHE_SIZE: Final = 16_384
"""Record values whose units (with their ids and displayed texts) are kept between turns: a
turn ranks the same record values as the one before, except those written or marked since."""

RecordUnits = tuple[tuple[MemoryUnit, ...], tuple[str, ...], tuple[str, ...]]
"""A record's units, their ids and their displayed texts."""

_RECORD_UNITS: OrderedDict[int, tuple[MemoryRecord, RecordUnits]] = OrderedDict()
_RECORD_UNITS_LOCK = threading.Lock()  # services may rank from worker threads too


def record_units(record: MemoryRecord) -> RecordUnits:
    """:func:`units_of` ``record`` with each unit's id and display, kept for this very record
    value (keyed by identity: the entry holds the record, so the key is never reused while
    kept, and a changed record is a new value)."""
    key = id(record)
    with _RECORD_UNITS_LOCK:
        kept = _RECORD_UNITS.get(key)
        if kept is not None and kept[0] is record:
            _RECORD_UNITS.move_to_end(key)
            return kept[1]
    units = units_of(record)
    found = (units, tuple(u.id for u in units), tuple(u.display for u in units))
    with _RECORD_UNITS_LOCK:
        _RECORD_UNITS[key] = (record, found)
        while len(_RECORD_UNITS) > RECORD_UNITS_CACHE_SIZE:
            _RECORD_UNITS.popitem(last=False)
    return found
