"""Memory records and the relations between them: the values the rest of the package works on.

A record is immutable. Changing what a fact says creates a new record that ``updates`` the old
one, so a fork that branched off before the change still sees the old value (see
:mod:`engine.memory.lineage`). Only the lifecycle, the ``ended_*`` point and the last-use
bookkeeping of a stored record ever change, and only through a
:class:`engine.memory.plan.MutationPlan`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class MemoryKind(StrEnum):
    """What a record is."""

    FACT = "fact"
    SUMMARY = "summary"
    OPEN_LOOP = "open_loop"


class MemoryScope(StrEnum):
    """Where a record is visible; ``GLOBAL`` is the realm (tenant)."""

    GLOBAL = "global"
    CHAT = "chat"
    BRANCH = "branch"
    FLOOR = "floor"


class Lifecycle(StrEnum):
    """``active -> compacted -> deprecated``; only active records are ever injected."""

    ACTIVE = "active"
    COMPACTED = "compacted"
    DEPRECATED = "deprecated"


class MemorySource(StrEnum):
    """Who wrote a record."""

    EXTRACTION = "extraction"  # a <summary>-style tag in the narrator's raw output
    AGENT = "agent"  # the memory agent's JSON ops
    MANUAL = "manual"  # a person, through a command
    COMPACTION = "compaction"  # the compaction job


class RelationKind(StrEnum):
    """How two records relate; the relation points from ``source_id`` to ``target_id``."""

    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    UPDATES = "updates"  # the source supersedes the target
    DERIVED_FROM = "derived_from"
    COMPACTS = "compacts"  # a higher-tier summary compacts a lower one
    RESOLVES = "resolves"  # a summary resolves an open loop


# Summary tiers are integers so that folding can go as high as needed; names for the first two.
MICRO_TIER = 1
MACRO_TIER = 2
MAX_SUMMARY_TIER = 7  # seven tiers, as in the tiered-summary pattern the reference recommends
_TIER_NAMES = {MICRO_TIER: "micro", MACRO_TIER: "macro"}


def tier_name(tier: int) -> str:
    """``micro``, ``macro``, then ``tier3``, ``tier4``..."""
    return _TIER_NAMES.get(tier, f"tier{tier}")


def estimate_tokens(text: str) -> int:
    """The storage-side token estimate (``ceil(chars / 4)``, at least 1) kept on each record.

    Budgets use the prompt's real tokenizer through an injected counter; this estimate only
    feeds the compaction token trigger, which must not depend on the model in use.
    """
    return max(1, math.ceil(len(text.strip()) / 4))


def normalize_key(key: str) -> str:
    """Fact keys compare trimmed, lower-cased and with inner whitespace collapsed."""
    return " ".join(key.split()).lower()


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """Where a record came from, so every memory can be traced to a floor and a writer."""

    source: MemorySource
    floor_no: int
    message_ref: str | None = None
    job_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRecord:
    """One fact, summary or open loop.

    ``origin_branch`` and ``created_floor`` place the record on the story's timeline (used for
    fork visibility); ``scope``/``scope_id`` say who may see it: the realm id for ``global``,
    the session id for ``chat``, the branch id for ``branch`` and :func:`floor_scope_id` for
    ``floor``. ``ended_branch``/``ended_floor`` record where the record left ``active``.
    """

    id: str
    kind: MemoryKind
    scope: MemoryScope
    scope_id: str
    realm_id: str
    session_id: str | None
    origin_branch: str | None
    text: str
    provenance: Provenance
    created_at: datetime
    created_floor: int
    key: str | None = None
    tier: int | None = None
    importance: float = 0.5
    confidence: float = 1.0
    lifecycle: Lifecycle = Lifecycle.ACTIVE
    updated_at: datetime | None = None
    last_used_at: datetime | None = None
    last_used_floor: int | None = None
    coverage_start: int | None = None
    coverage_end: int | None = None
    ended_branch: str | None = None
    ended_floor: int | None = None
    token_estimate: int = 0
    flags: tuple[str, ...] = ()
    story_date: str | None = None  # the in-story date of what it remembers, as the chat gave it

    @property
    def is_micro(self) -> bool:
        """A first-tier summary."""
        return self.kind is MemoryKind.SUMMARY and self.tier == MICRO_TIER

    @property
    def display(self) -> str:
        """The text as shown in a memory block: facts as ``key: value``."""
        if self.kind is MemoryKind.FACT and self.key:
            return f"{self.key}: {self.text}"
        return self.text


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRelation:
    """A typed edge between two records, e.g. ``new --updates--> old``."""

    source_id: str
    target_id: str
    kind: RelationKind
    created_at: datetime
    floor_no: int
    note: str = ""


def floor_scope_id(branch_id: str, floor_no: int) -> str:
    """The scope id of a floor-scoped record: the branch and the floor number."""
    return f"{branch_id}#{floor_no}"


IdFactory = Callable[[], str]
"""Makes new record ids; injected so that plans are deterministic in tests."""


@dataclass(slots=True)
class SequentialIds:
    """A deterministic :data:`IdFactory`: ``prefix-1``, ``prefix-2``..."""

    prefix: str = "mem"
    _counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def __call__(self) -> str:
        return f"{self.prefix}-{next(self._counter)}"
