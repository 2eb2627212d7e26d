"""Protocols the engine needs from the outside world.

Adapters implement these structurally (no base classes): ``adapters.storage`` the unit of work
and repositories, ``adapters.llm`` the chat model, ``bot`` the clock and the event bus. Tests
implement them with fakes. Only engine values cross these seams.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from engine.chat_port import (
    ChatChunk as ChatChunk,
)
from engine.chat_port import (
    ChatMessage as ChatMessage,
)
from engine.chat_port import (
    ChatModel as ChatModel,
)
from engine.chat_port import (
    ChatRequest as ChatRequest,
)
from engine.chat_port import (
    ChatResult as ChatResult,
)
from engine.chat_port import (
    ChatRole as ChatRole,
)
from engine.chat_port import (
    ChatStream as ChatStream,
)
from engine.chat_port import (
    ToolCall as ToolCall,
)
from engine.chat_port import (
    ToolSpec as ToolSpec,
)
from engine.chat_port import (
    Usage as Usage,
)
from engine.timeline.values import (
    Asset,
    AssetKind,
    Branch,
    Floor,
    FloorState,
    Message,
    NewMessage,
    Page,
    PageContext,
    PageStatus,
    PlatformLink,
    Realm,
    Session,
    SessionSettings,
)
from engine.variables.values import LogEntry, Mutation, NewLogEntry, Scope

# --------------------------------------------------------------------------- clock, randomness


class Clock(Protocol):
    """Where the engine gets the time; tests freeze or advance it."""

    def now(self) -> datetime:
        """The current instant, timezone-aware (UTC)."""
        ...


class RandomSource(Protocol):
    """Unseeded randomness (seeded macro randomness is derived inside the macro engine)."""

    def random(self) -> float:
        """A float in [0, 1)."""
        ...


# --------------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """Something that happened, e.g. ``floor.committed`` (names after seed 003 section 10)."""

    name: str
    payload: Mapping[str, Any] = field(default_factory=dict)


class EventSink(Protocol):
    """Receives engine events; the in-process bus in ``bot`` fans them out to subscribers."""

    def emit(self, event: Event) -> None:
        """Deliver ``event``; must not raise and must not block."""
        ...


# --------------------------------------------------------------------------- storage
# The unit of work and the repositories (issue 2) live below this line.
#
# One unit of work is one short database transaction, used by one task only: open it, read or
# change what one step needs, leave it (commit on success, roll back on an exception). Never
# hold one across a model call. ``Storage.read()`` gives a unit of work for reads only.
# Repositories return engine values, never rows. A uniqueness or lock failure surfaces as
# ``engine.errors.ConflictError`` when the unit of work ends.


class RealmRepository(Protocol):
    """Realms, unique by ``(platform, key)``."""

    async def get(self, realm_id: int) -> Realm:
        """The realm; NotFoundError when missing."""
        ...

    async def find(self, platform: str, key: str) -> Realm | None:
        """The realm with this platform key, if any."""
        ...

    async def add(self, platform: str, key: str) -> Realm:
        """Create a realm."""
        ...


class SessionRepository(Protocol):
    """Sessions, unique by ``(platform, key)``."""

    async def get(self, session_id: int) -> Session:
        """The session; NotFoundError when missing."""
        ...

    async def find(self, platform: str, key: str) -> Session | None:
        """The session with this platform key, if any."""
        ...

    async def add(
        self, *, realm_id: int, platform: str, key: str, settings: SessionSettings
    ) -> Session:
        """Create a session."""
        ...

    async def get_for_update(self, session_id: int) -> Session:
        """The session, its row locked until the unit of work ends where the database locks
        rows (PostgreSQL), so a read-then-write of its settings loses no other process's
        change; NotFoundError when missing."""
        ...

    async def update_settings(self, session_id: int, settings: SessionSettings) -> None:
        """Replace the session's settings object."""
        ...

    async def get_with_branches(self, session_id: int) -> tuple[Session, list[Branch]]:
        """The session and every branch of it, oldest first, in one read; NotFoundError
        when the session is missing."""
        ...


class BranchRepository(Protocol):
    """Branches, unique by ``(session, name)``."""

    async def get(self, branch_id: int) -> Branch:
        """The branch; NotFoundError when missing."""
        ...

    async def find(self, session_id: int, name: str) -> Branch | None:
        """The branch of this session with this name, if any."""
        ...

    async def list(self, session_id: int) -> list[Branch]:
        """Every branch of the session, oldest first."""
        ...

    async def add(
        self,
        *,
        session_id: int,
        name: str,
        parent_id: int | None,
        fork_floor: int | None,
        fork_page: int | None,
    ) -> Branch:
        """Create a branch."""
        ...

    async def rename(self, branch_id: int, name: str) -> None:
        """Give the branch a new name (unique in its session)."""
        ...

    async def lock(self, branch_id: int) -> None:
        """Hold the branch's row until the unit of work ends, so changes to one branch's
        timeline and variables are serialised (a no-op where the database serialises writers)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class LatestFloor:
    """See :meth:`FloorRepository.latest_for_open`. ``next_floor_writes`` is True when
    ``floor`` is None (not checked: the caller reads the writes itself). ``newest_seq``: the
    number of the branch's newest floor in any state (a failed one included), None when the
    branch has none of its own."""

    floor: Floor | None
    pending: bool
    next_floor_writes: bool
    newest_seq: int | None = None


class WindowPage(NamedTuple):
    """A committed floor of a history window with one of its pages, or a failed floor (its
    input stays in the chat; ``failed`` set, and no page: ``page_id`` and ``number`` 0). A
    turn reads one per floor of its window, so this is a tuple: far cheaper to build than a
    frozen value."""

    floor_id: int
    branch_id: int
    seq: int
    floor_hidden: bool
    active_page: int | None
    page_id: int
    number: int
    page_hidden: bool
    meta: Mapping[str, Any] | None
    failed: bool = False


class WindowMessage(NamedTuple):
    """What a history window needs of a stored message (a tuple, as :class:`WindowPage`)."""

    floor_id: int
    page_id: int | None
    role: str
    speaker_name: str | None
    raw: str
    hidden: bool
    speaker_id: str | None
    """The platform user id of the speaker (personas are matched by it, never by name)."""


class FloorRepository(Protocol):
    """Floors. Their ``seq`` is unique per branch among floors that have not failed."""

    async def add(
        self, *, branch_id: int, seq: int, owner: str | None = None, speaker: str | None = None
    ) -> Floor:
        """Create a draft floor opened by process lease ``owner``, replied by ``speaker``
        (a group member; None: the session's character)."""
        ...

    async def get(self, floor_id: int) -> Floor:
        """The floor; NotFoundError when missing."""
        ...

    async def latest(self, branch_id: int) -> Floor | None:
        """The branch's own newest floor that has not failed."""
        ...

    async def committed(self, branch_id: int, first: int, last: int | None) -> list[Floor]:
        """The branch's own committed floors with ``first <= seq <= last``, by ``seq``."""
        ...

    async def in_state(self, state: FloorState) -> list[Floor]:
        """Every floor in ``state`` (used on start to find interrupted generations)."""
        ...

    async def uncommitted_after(self, branch_id: int, seq: int) -> list[Floor]:
        """The branch's own floors numbered above ``seq`` that are not committed (draft,
        generating or failed: inputs still without a reply), by ``seq`` and then by age."""
        ...

    async def newest(self, branch_id: int) -> Floor | None:
        """The branch's own newest floor in any state, failed ones included (by ``seq``, then
        the newest of a number two floors share in databases from before failed floors
        kept their number)."""
        ...

    async def newest_committed(self, branch_id: int) -> int | None:
        """The number of the branch's own newest committed floor (None: it has none)."""
        ...

    async def failed(self, branch_id: int, first: int, last: int | None) -> list[Floor]:
        """The branch's own failed floors with ``first <= seq <= last``, by ``seq``."""
        ...

    async def latest_for_open(self, branch_id: int) -> LatestFloor:
        """What opening the branch's next floor must know, in one read: its own newest floor
        that has not failed (as :meth:`latest`), whether that floor has a pending page,
        whether explicit floor-scope writes wait for the floor after it, and the number of
        its newest floor of any state (as :meth:`newest`)."""
        ...

    async def open_generating(
        self,
        *,
        branch_id: int,
        seq: int,
        inputs: Sequence[NewMessage],
        owner: str | None = None,
        speaker: str | None = None,
        seed: int | None = None,
    ) -> tuple[Floor, Page]:
        """Create floor ``seq`` already ``generating``, with its input messages (numbered
        from 1) and its pending page 1 (empty meta), both owned by process lease ``owner``;
        ``speaker`` and ``seed`` are recorded on the floor (see :class:`Floor`)."""
        ...

    async def window(
        self, spans: Sequence[tuple[int, int, int]], *, meta_seq: int | None = None
    ) -> list[WindowPage]:
        """Every page of the committed floors of each ``(branch_id, first, last)`` span (own
        floors with ``first <= seq <= last``), by ``seq`` and page number, with the page's meta
        only on floor ``meta_seq`` (None elsewhere); and one row per failed floor of the spans
        (``failed`` set, page fields 0)."""
        ...

    async def compare_and_set(
        self,
        floor_id: int,
        *,
        expected: FloorState,
        state: FloorState,
        error: str | None = None,
        active_page: int | None = None,
        owner: str | None = None,
    ) -> bool:
        """Move the floor to ``state`` only if it is in ``expected`` (also setting
        ``active_page`` and ``owner`` when given); False when it was not."""
        ...

    async def set_active_page(self, floor_id: int, *, expected: int | None, page: int) -> bool:
        """Make page number ``page`` active only if ``expected`` still is; False otherwise."""
        ...

    async def set_hidden(self, floor_id: int, hidden: bool) -> None:
        """Hide or show the floor."""
        ...


class PageRepository(Protocol):
    """Pages of floors, numbered from 1 per floor."""

    async def add(
        self, *, floor_id: int, number: int, meta: Mapping[str, Any], owner: str | None = None
    ) -> Page:
        """Create a pending page generated by process lease ``owner``."""
        ...

    async def get(self, page_id: int) -> Page:
        """The page; NotFoundError when missing."""
        ...

    async def context(self, page_id: int) -> PageContext:
        """The page with its floor and branch, in one read; NotFoundError when missing."""
        ...

    async def of_floors(self, floor_ids: Sequence[int]) -> list[Page]:
        """Every page of these floors, by floor then number."""
        ...

    async def compare_and_set(
        self,
        page_id: int,
        *,
        expected: PageStatus,
        status: PageStatus,
        error: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> bool:
        """Move the page to ``status`` only if it is ``expected``; False when it was not."""
        ...

    async def set_hidden(self, page_id: int, hidden: bool) -> None:
        """Hide or show the page."""
        ...

    async def in_status(self, status: PageStatus) -> list[Page]:
        """Every page in ``status`` (used on start to find interrupted regenerations)."""
        ...


class MessageRepository(Protocol):
    """Messages: a floor's inputs (no page) and a page's replies."""

    async def add(
        self, *, floor_id: int, page_id: int | None, messages: Sequence[NewMessage]
    ) -> None:
        """Append messages after the existing ones of the floor input or page."""
        ...

    async def of_floors(self, floor_ids: Sequence[int]) -> list[Message]:
        """Every message of these floors (inputs and all pages), in order."""
        ...

    async def window(self, floor_ids: Sequence[int]) -> list[WindowMessage]:
        """The messages of these floors as a history window reads them, ordered as
        :meth:`of_floors` orders them."""
        ...

    async def hide_by_ref(self, floor_id: int, platform_ref: str) -> int:
        """Hide the floor's messages that carry ``platform_ref``; returns how many."""
        ...


class LinkRepository(Protocol):
    """The map from platform messages to floors and pages, unique by (session, ref)."""

    async def put(self, link: PlatformLink) -> None:
        """Record (or replace) where a platform message maps."""
        ...

    async def get(self, session_id: int, platform_ref: str) -> PlatformLink | None:
        """Where a platform message maps, if known."""
        ...


class AssetRepository(Protocol):
    """Cards, presets, world books and regex sets, unique by (realm, kind, name)."""

    async def put(
        self, *, realm_id: int, kind: AssetKind, name: str, data: Mapping[str, Any]
    ) -> Asset:
        """Create the asset or replace its data."""
        ...

    async def get(self, realm_id: int, kind: AssetKind, name: str) -> Asset | None:
        """The asset, if it exists."""
        ...

    async def get_many(
        self, realm_id: int, wanted: Sequence[tuple[AssetKind, str]]
    ) -> list[Asset]:
        """The assets of these ``(kind, name)`` pairs that exist, in one read (any order)."""
        ...

    async def list(self, realm_id: int, kind: AssetKind | None = None) -> list[Asset]:
        """The realm's assets (of one kind), by kind and name."""
        ...

    async def delete(self, realm_id: int, kind: AssetKind, name: str) -> bool:
        """Remove the asset; False when it did not exist."""
        ...


class VariableRepository(Protocol):
    """The variable log, materialised values per scope owner, and branch snapshots.

    Owners: ``page`` -> page id, ``floor`` -> floor id, ``branch`` -> branch id,
    ``chat`` -> session id, ``global`` -> realm id.
    """

    async def append(self, entries: Sequence[NewLogEntry]) -> None:
        """Append entries to the log, keeping their order."""
        ...

    async def values(self, scope: Scope, owner_id: int) -> dict[str, Any]:
        """The materialised values of one scope owner."""
        ...

    async def values_of(
        self, owners: Sequence[tuple[Scope, int]]
    ) -> dict[tuple[Scope, int], dict[str, Any]]:
        """The materialised values of several scope owners in one read (every owner asked
        for is in the result, possibly empty)."""
        ...

    async def change(self, scope: Scope, owner_id: int, delta: Mapping[str, Any]) -> None:
        """Apply a delta (``engine.variables.fold.DELETED`` removes a key)."""
        ...

    async def replace(self, scope: Scope, owner_id: int, values: Mapping[str, Any]) -> None:
        """Replace every value of one scope owner."""
        ...

    async def page_log(self, page_ids: Sequence[int], scope: Scope) -> dict[int, list[Mutation]]:
        """The page-sourced log entries of ``scope`` for these pages, in order, by page id."""
        ...

    async def explicit(
        self, branch_id: int, first: int, last: int | None, scope: Scope
    ) -> list[LogEntry]:
        """Explicit entries of ``scope`` positioned on ``branch_id`` at ``first..last``."""
        ...

    async def history(self, key: str, *, session_id: int, realm_id: int) -> list[LogEntry]:
        """Every log entry of ``key`` in the session, plus the realm's global ones, in order."""
        ...

    async def save_snapshot(self, page_id: int, values: Mapping[str, Any]) -> None:
        """Store the branch scope as it stands after ``page`` (immutable once written)."""
        ...

    async def snapshot(self, page_id: int) -> dict[str, Any] | None:
        """The snapshot stored for ``page``, if any."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessLease:
    """A running process's claim to the floors and pages it generates (see
    :mod:`engine.timeline.leases`): alive while renewed before ``expires_at``."""

    owner: str
    host: str
    pid: int
    heartbeat_at: datetime
    expires_at: datetime


class LeaseRepository(Protocol):
    """Process leases, one row per running process."""

    async def renew(self, lease: ProcessLease) -> None:
        """Store ``lease`` (insert it, or update the owner's row)."""
        ...

    async def of_owners(self, owners: Sequence[str]) -> list[ProcessLease]:
        """The leases of these owners that exist."""
        ...

    async def release(self, owner: str) -> None:
        """Delete the owner's lease (a clean stop)."""
        ...


class ItemizationRepository(Protocol):
    """How each generated page's prompt was assembled (a bounded JSON itemization)."""

    async def add(self, page_id: int, data: Mapping[str, Any]) -> None:
        """Store a page's itemization (one statement, inside the page's commit)."""
        ...

    async def of_page(self, page_id: int) -> dict[str, Any] | None:
        """The page's itemization, or None when it has none (an older page)."""
        ...


class UnitOfWork(Protocol):
    """One transaction and the repositories that work inside it (read-only members, so an
    implementation may hold more specific repository types)."""

    @property
    def realms(self) -> RealmRepository: ...
    @property
    def sessions(self) -> SessionRepository: ...
    @property
    def branches(self) -> BranchRepository: ...
    @property
    def floors(self) -> FloorRepository: ...
    @property
    def pages(self) -> PageRepository: ...
    @property
    def messages(self) -> MessageRepository: ...
    @property
    def links(self) -> LinkRepository: ...
    @property
    def assets(self) -> AssetRepository: ...
    @property
    def variables(self) -> VariableRepository: ...
    @property
    def leases(self) -> LeaseRepository: ...
    @property
    def itemizations(self) -> ItemizationRepository: ...


class Storage(Protocol):
    """Where units of work come from: ``async with storage.unit_of_work() as uow: ...``
    commits when the block ends normally and rolls back when it raises."""

    def unit_of_work(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A fresh unit of work (never share one between tasks)."""
        ...

    def read(self) -> AbstractAsyncContextManager[UnitOfWork]:
        """A unit of work that only reads: it sees one consistent snapshot and never waits
        for, or holds up, writers (on SQLite it takes no write lock). Never write in it."""
        ...
