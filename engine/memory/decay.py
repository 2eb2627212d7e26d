"""Decay: how much an old memory's weight fades, measured in story floors and in time.

``factor = max(min_factor, 0.5 ** (floors / floor_half_life) * 0.5 ** (age / time_half_life))``,
counted from the last time the record was written or used. Floors make it deterministic and
meaningful for a story that pauses for weeks; time makes a chat abandoned for months fade.
The reference gives only the lower bound (0.05) and leaves half-lives unset; the values below
are this engine's choice: facts describe state and fade slowly, micro summaries and open loops
describe recent events and fade fast, higher summaries sit in between.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from engine.memory.errors import MemoryPolicyError
from engine.memory.records import MemoryKind, MemoryRecord

DECAY_MIN_FACTOR = 0.05
FACT_FLOOR_HALF_LIFE = 300
FACT_TIME_HALF_LIFE = timedelta(days=90)
MICRO_FLOOR_HALF_LIFE = 40
MICRO_TIME_HALF_LIFE = timedelta(days=14)
MACRO_FLOOR_HALF_LIFE = 150
MACRO_TIME_HALF_LIFE = timedelta(days=60)
OPEN_LOOP_FLOOR_HALF_LIFE = 60
OPEN_LOOP_TIME_HALF_LIFE = timedelta(days=7)


@dataclass(frozen=True, slots=True, kw_only=True)
class HalfLife:
    """Half-lives for one kind of record; 0 floors or a zero timedelta switch that part off."""

    floors: float
    time: timedelta


@dataclass(frozen=True, slots=True, kw_only=True)
class DecayPolicy:
    """Half-lives per kind of record and the floor under the factor."""

    fact: HalfLife = HalfLife(floors=FACT_FLOOR_HALF_LIFE, time=FACT_TIME_HALF_LIFE)
    micro: HalfLife = HalfLife(floors=MICRO_FLOOR_HALF_LIFE, time=MICRO_TIME_HALF_LIFE)
    macro: HalfLife = HalfLife(floors=MACRO_FLOOR_HALF_LIFE, time=MACRO_TIME_HALF_LIFE)
    open_loop: HalfLife = HalfLife(floors=OPEN_LOOP_FLOOR_HALF_LIFE, time=OPEN_LOOP_TIME_HALF_LIFE)
    min_factor: float = DECAY_MIN_FACTOR

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_factor <= 1.0:
            raise MemoryPolicyError(f"decay min_factor {self.min_factor} is outside [0, 1]")
        for name in ("fact", "micro", "macro", "open_loop"):
            half: HalfLife = getattr(self, name)
            if half.floors < 0 or half.time < timedelta(0):
                raise MemoryPolicyError(f"decay half-life for {name} is negative")

    def half_life_for(self, record: MemoryRecord) -> HalfLife:
        """The half-lives that apply to ``record``."""
        if record.kind is MemoryKind.FACT:
            return self.fact
        if record.kind is MemoryKind.OPEN_LOOP:
            return self.open_loop
        return self.micro if record.is_micro else self.macro


def reference_floor(record: MemoryRecord) -> int:
    """The floor decay counts from: the later of creation and last use."""
    return max(record.created_floor, record.last_used_floor or record.created_floor)


def reference_time(record: MemoryRecord) -> datetime:
    """The instant decay counts from: the latest of creation, update and last use."""
    stamps = [record.created_at, record.updated_at, record.last_used_at]
    return max(stamp for stamp in stamps if stamp is not None)


class DecayParts(NamedTuple):
    """What a record's decay depends on besides the floor and the clock: the point it counts
    from and its half-lives (in seconds for time), so a turn that ranks the same record value
    again only does the arithmetic (:func:`decay_at`)."""

    floor: int
    time: datetime
    half_floors: float
    half_seconds: float
    min_factor: float


def decay_parts(record: MemoryRecord, policy: DecayPolicy) -> DecayParts:
    """The parts of ``record``'s decay under ``policy``."""
    half = policy.half_life_for(record)
    return DecayParts(
        reference_floor(record),
        reference_time(record),
        half.floors,
        half.time.total_seconds(),
        policy.min_factor,
    )


def decay_at(parts: DecayParts, floor_no: int, now: datetime) -> float:
    """The weight multiplier in ``[parts.min_factor, 1]`` at ``floor_no`` and ``now``."""
    return decays_at((parts,), floor_no, now)[0]


def decays_at(parts: Sequence[DecayParts], floor_no: int, now: datetime) -> list[float]:
    """:func:`decay_at` of each parts, in one pass (a turn's ranking needs one per candidate
    record, so the curve is written out here rather than called twice per record): each half
    ``0.5 ** (elapsed / half_life)``, 1.0 when the half-life is off or nothing elapsed."""
    found: list[float] = []
    for part in parts:
        floors, half_floors = floor_no - part.floor, part.half_floors
        seconds, half_seconds = (now - part.time).total_seconds(), part.half_seconds
        by_floor = 0.5 ** (floors / half_floors) if half_floors > 0 and floors > 0 else 1.0
        by_time = 0.5 ** (seconds / half_seconds) if half_seconds > 0 and seconds > 0 else 1.0
        factor = by_floor * by_time
        least = part.min_factor
        found.append(least if factor < least else 1.0 if factor > 1.0 else factor)
    return found


def decay_factor(
    record: MemoryRecord, *, floor_no: int, now: datetime, policy: DecayPolicy
) -> float:
    """The record's weight multiplier in ``[policy.min_factor, 1]``."""
    return decay_at(decay_parts(record, policy), floor_no, now)
