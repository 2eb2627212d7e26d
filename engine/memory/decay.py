"""Decay: how much an old memory's weight fades, measured in story floors and in time.

``factor = max(min_factor, 0.5 ** (floors / floor_half_life) * 0.5 ** (age / time_half_life))``,
counted from the last time the record was written or used. Floors make it deterministic and
meaningful for a story that pauses for weeks; time makes a chat abandoned for months fade.
The reference gives only the lower bound (0.05) and leaves half-lives unset; the values below
are this engine's choice: facts describe state and fade slowly, micro summaries and open loops
describe recent events and fade fast, higher summaries sit in between.
"""

from __future__ import annotations

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


def half_life_factor(elapsed: float, half_life: float) -> float:
    """``0.5 ** (elapsed / half_life)``; 1.0 when the half-life is off or nothing elapsed."""
    if half_life <= 0 or elapsed <= 0:
        return 1.0
    return float(0.5 ** (elapsed / half_life))


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
    factor = half_life_factor(floor_no - parts.floor, parts.half_floors) * half_life_factor(
        (now - parts.time).total_seconds(), parts.half_seconds
    )
    return max(parts.min_factor, min(1.0, factor))


def decay_factor(
    record: MemoryRecord, *, floor_no: int, now: datetime, policy: DecayPolicy
) -> float:
    """The record's weight multiplier in ``[policy.min_factor, 1]``."""
    return decay_at(decay_parts(record, policy), floor_no, now)
