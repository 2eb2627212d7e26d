"""What a front end (console, Discord, Telegram) may ask of the engine.

Front ends convert platform events into these values at their edge and call a
:class:`RoleplayService`; they never touch storage or the model themselves. The service is
implemented in :mod:`engine.turns` on top of the ports; tests of a front end may use a fake.

Sessions are addressed by :class:`SessionKey` (platform + realm + external key, unique), branches
by name (``"main"`` is every session's first branch; a Discord thread or Telegram topic uses its
platform id as the name). Floors are numbered from 1 along a branch's lineage; pages are
numbered from 1 within a floor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Scope = Literal["page", "floor", "branch", "chat", "global"]
AssetKind = Literal["card", "preset", "worldbook", "regex", "chat"]
MacroMode = Literal["read_only", "full", "off"]
MAIN_BRANCH = "main"


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionKey:
    """A session's identity: ``platform`` (discord|telegram|console), ``realm`` (guild or chat
    id, or ``"local"``) and ``key`` (channel id, chat id or console session name)."""

    platform: str
    realm: str
    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Speaker:
    """A human author of input: platform user id and the display name used as ``{{user}}``."""

    id: str
    name: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UserLine:
    """One message typed by a user; ``ref`` is the platform message id, kept to map back."""

    speaker: Speaker
    text: str
    ref: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplyView:
    """The active page of a floor as a front end shows it."""

    session: SessionKey
    branch: str
    floor: int
    page: int
    pages: int
    text: str
    character: str
    avatar_url: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchInfo:
    """A branch of a session: its name, parent and the floor it forks after."""

    name: str
    parent: str | None
    fork_floor: int | None
    floors: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    """What ``/session info`` shows."""

    key: SessionKey
    character: str | None
    preset: str | None
    worldbooks: tuple[str, ...]
    branches: tuple[BranchInfo, ...]
    prompt_mode: str = "compat_strict"
    macro_mode: MacroMode = "read_only"


@dataclass(frozen=True, slots=True, kw_only=True)
class VariableWrite:
    """One entry of a variable's history: who wrote which value where."""

    scope: Scope
    value: Any
    floor: int | None
    page: int | None
    deleted: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportSummary:
    """What an import found, for the confirmation message."""

    kind: AssetKind
    name: str
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlatformRef:
    """Where a platform message maps in the timeline."""

    branch: str
    floor: int
    page: int | None
    role: Literal["user", "assistant"]


OnText = Callable[[str], Awaitable[None]]
"""Streaming callback: receives the reply's visible text so far, after each chunk."""


class RoleplayService(Protocol):
    """The engine's application service, shared by every front end."""

    async def open_session(self, key: SessionKey, *, character: str | None = None) -> SessionInfo:
        """Get or create the session (and its realm and main branch)."""
        ...

    async def session_info(self, key: SessionKey) -> SessionInfo:
        """Describe a session; NotFoundError when it does not exist."""
        ...

    async def respond(
        self,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
    ) -> ReplyView:
        """Record ``lines`` as one new floor, generate and commit the reply."""
        ...

    async def regenerate(
        self, key: SessionKey, branch: str, *, on_text: OnText | None = None
    ) -> ReplyView:
        """Add a page to the branch's latest floor by re-running its turn."""
        ...

    async def swipe(self, key: SessionKey, branch: str, step: int) -> ReplyView:
        """Activate the page ``step`` away (-1 previous, +1 next) on the latest floor."""
        ...

    async def fork(
        self, key: SessionKey, branch: str, *, after_floor: int | None, name: str
    ) -> BranchInfo:
        """Create branch ``name`` forking ``branch`` after ``after_floor`` (None: latest)."""
        ...

    async def history(self, key: SessionKey, branch: str, *, limit: int = 50) -> list[ReplyView]:
        """The active pages along the branch, oldest first (at most ``limit``)."""
        ...

    async def variables(
        self, key: SessionKey, branch: str, scope: Scope | None = None
    ) -> dict[str, Any]:
        """The merged local view (scope None) or one scope, at the head of the branch."""
        ...

    async def set_variable(
        self, key: SessionKey, branch: str, name: str, value: Any, scope: Scope = "chat"
    ) -> None:
        """An explicit write to one scope (``/vars set``)."""
        ...

    async def delete_variable(
        self, key: SessionKey, branch: str, name: str, scope: Scope = "chat"
    ) -> None:
        """An explicit delete in one scope."""
        ...

    async def variable_history(
        self, key: SessionKey, branch: str, name: str
    ) -> list[VariableWrite]:
        """Every write of ``name`` visible from the branch, oldest first."""
        ...

    async def link_message(self, key: SessionKey, platform_ref: str, ref: PlatformRef) -> None:
        """Remember that platform message ``platform_ref`` shows ``ref``."""
        ...

    async def resolve_message(self, key: SessionKey, platform_ref: str) -> PlatformRef | None:
        """Map a platform message back to its floor and page."""
        ...

    async def hide_message(self, key: SessionKey, platform_ref: str) -> None:
        """A platform deletion: hide the floor or page it maps to (never delete)."""
        ...

    async def import_asset(
        self, key: SessionKey, kind: AssetKind, filename: str, data: bytes
    ) -> ImportSummary:
        """Import a SillyTavern file into the session's realm and bind it to the session."""
        ...

    async def preview(self, key: SessionKey, branch: str, text: str) -> str:
        """Evaluate macros in ``text`` (preview phase: no write persists)."""
        ...

    async def dry_run(self, key: SessionKey, branch: str, text: str) -> Mapping[str, Any]:
        """Assemble the prompt for ``text`` without calling the model."""
        ...

    async def export_chat(self, key: SessionKey, branch: str) -> bytes:
        """The branch as SillyTavern JSONL."""
        ...

    async def reset(self, key: SessionKey) -> None:
        """Start the session over on a fresh main branch (old floors stay, hidden)."""
        ...
