"""The values of a native archive (see :mod:`engine.formats.archive` for the format)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.formats.archive_memory import ArchiveMemoryRecord, ArchiveMemoryRelation
from engine.timeline.values import AssetKind, FloorState, LinkRole, MessageRole, PageStatus
from engine.variables.values import LogSource, MutationOp, Scope


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveSession:
    """Which session the archive came from, and its settings (a JSON object)."""

    platform: str
    key: str
    realm_platform: str
    realm_key: str
    settings: Mapping[str, Any]
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveBranch:
    """A branch; ``parent`` is the index of an earlier branch."""

    name: str
    parent: int | None
    fork_floor: int | None
    fork_page: int | None
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveFloor:
    """A floor of branch ``branch`` (an index)."""

    branch: int
    seq: int
    state: FloorState
    active_page: int | None
    hidden: bool
    error: str | None
    created_at: datetime
    updated_at: datetime
    speaker: str | None = None
    """A group reply's member (None: the session's character)."""
    seed: int | None = None
    """The activation seed of the group turn this floor starts (None on other floors)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchivePage:
    """A page of floor ``floor`` (an index)."""

    floor: int
    number: int
    status: PageStatus
    hidden: bool
    error: str | None
    meta: Mapping[str, Any]
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveMessage:
    """A message: an input of floor ``floor`` (``page`` None) or a reply on page ``page``."""

    floor: int
    page: int | None
    seq: int
    role: MessageRole
    speaker_id: str | None
    speaker_name: str | None
    raw: str
    display: str
    hidden: bool
    platform_ref: str | None
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveLink:
    """A platform message mapped to a floor (and page)."""

    platform_ref: str
    branch: int
    floor: int
    page: int | None
    role: LinkRole


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveLogEntry:
    """One persisted variable mutation, with where it came from (indices)."""

    source: LogSource
    scope: Scope
    key: str
    op: MutationOp
    value: Any
    branch: int | None
    seq: int | None
    floor: int | None
    page: int | None
    created_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveValue:
    """A materialised variable value. ``owner`` is a page, floor or branch index for those
    scopes, and None for ``chat`` (the session) and ``global`` (the realm)."""

    scope: Scope
    owner: int | None
    key: str
    value: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveSnapshot:
    """The stored branch scope after page ``page``."""

    page: int
    data: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ArchiveAsset:
    """A bound asset, as the JSON the realm stores."""

    kind: AssetKind
    name: str
    data: Mapping[str, Any]
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Archive:
    """A whole session; see the module docstring."""

    session: ArchiveSession
    exported_at: datetime
    branches: tuple[ArchiveBranch, ...] = ()
    floors: tuple[ArchiveFloor, ...] = ()
    pages: tuple[ArchivePage, ...] = ()
    messages: tuple[ArchiveMessage, ...] = ()
    links: tuple[ArchiveLink, ...] = ()
    variable_log: tuple[ArchiveLogEntry, ...] = ()
    variable_values: tuple[ArchiveValue, ...] = ()
    snapshots: tuple[ArchiveSnapshot, ...] = ()
    assets: tuple[ArchiveAsset, ...] = ()
    memory_records: tuple[ArchiveMemoryRecord, ...] = ()
    memory_relations: tuple[ArchiveMemoryRelation, ...] = field(default=())
