"""The values front ends and the engine exchange: sessions, speakers, lines, replies, branches,
session descriptions, imports and memories, and the turn callbacks (see :mod:`engine.turns.api`,
which re-exports them beside the :class:`~engine.turns.api.RoleplayService` protocol)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from engine.memory.injection import MEMORY_BUDGET_TOKENS
from engine.prompt.inputs import AuthorNote
from engine.prompt.macro_port import MacroMode
from engine.timeline.values import MAIN_BRANCH
from engine.variables.values import Scope

AssetKind = Literal["card", "preset", "worldbook", "regex", "chat", "group"]
ReplyPolicy = Literal["every_message", "mention", "quiet_period"]
MemoryKindName = Literal["fact", "summary", "open_loop"]
REPLY_POLICIES: tuple[ReplyPolicy, ...] = get_args(ReplyPolicy)
MEMORY_LIST_LIMIT = 20
"""Memories :meth:`RoleplayService.memories` returns when no limit is given."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OptionSpec:
    """One user-facing session option: its name, the words it takes (``()`` for a number,
    ``budget``) for autocomplete, and a one-line help (the specs are in
    :mod:`engine.turns.options`)."""

    name: str
    values: tuple[str, ...]
    help: str


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
    """The active page of a floor as a front end shows it. A failed floor (no reply) has
    ``failed`` set, no pages, and its user input as ``text``."""

    session: SessionKey
    branch: str
    floor: int
    page: int
    pages: int
    text: str
    character: str
    avatar_url: str | None = None
    failed: bool = False
    error: str | None = None
    """Why a failed floor has no reply (the message stored with it, safe to show)."""
    inputs: tuple[tuple[str, str], ...] = ()
    """The floor's visible user input as ``(speaker name, text)`` pairs, first first (empty for
    a greeting floor, and where the caller only answers a turn)."""
    unanswered: bool = False
    """A group turn nobody answered (manual strategy, or nobody chosen): the floor keeps the
    user's lines with no reply (``text`` and ``character`` empty); ``speak`` makes a member
    answer."""
    hidden: bool = False
    """The floor is hidden (``/del``, a deleted platform message): kept, left out of prompts;
    only ``history(include_hidden=True)`` returns such floors."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchInfo:
    """A branch of a session: its name, parent and the floor it forks after."""

    name: str
    parent: str | None
    fork_floor: int | None
    floors: int

    @property
    def floors_text(self) -> str:
        """The count as people write it: "1 floor", "2 floors"."""
        return f"{self.floors} floor" + ("" if self.floors == 1 else "s")


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionInfo:
    """What ``/session info`` shows (:func:`engine.turns.options.option_lines` lists its
    options in the words ``/set`` takes)."""

    key: SessionKey
    character: str | None
    preset: str | None
    worldbooks: tuple[str, ...]
    branches: tuple[BranchInfo, ...]
    prompt_mode: str = "compat_strict"
    macro_mode: MacroMode = "read_only"
    reply_policy: ReplyPolicy | None = None
    """None: the front end's default (Discord channels wait for a quiet period)."""
    tools: bool = False
    """Whether the model is offered the built-in tools (option ``tools``)."""
    memory: bool = True
    """Long-term memory: summaries kept, memory jobs run, the block injected (``memory``)."""
    memory_budget: int = MEMORY_BUDGET_TOKENS
    """Tokens of long-term memory injected per turn (option ``budget``)."""
    tools_global_writes: bool = False
    """Whether the model's tools may write the realm's global variables (``global_writes``)."""
    closed: bool = False
    """``/tavern stop`` closed it: turns are refused until ``open_session`` reopens it."""
    current_branch: str = MAIN_BRANCH
    """The branch a chat without threads or topics plays on (Telegram ``/branch``)."""
    author_note: AuthorNote | None = None
    """The session's Author's Note (:mod:`engine.turns.notes`), None when it has none."""
    members: tuple[str, ...] = ()
    """A group session's characters in list order (empty: a solo session)."""
    muted: tuple[str, ...] = ()
    """The group's muted members (they speak only when called with ``speak``)."""
    strategy: str | None = None
    """The group's activation strategy (natural, list, pooled, manual); None when solo."""
    group_mode: str | None = None
    """The group's generation mode (swap, join); None when solo."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionState:
    """What a front end checks before each message, read from the session's row alone (no
    branches), so it is cheap enough to read every time instead of caching it: another
    process may have closed the session, swapped its character or changed its policy."""

    key: SessionKey
    closed: bool
    character: str | None
    reply_policy: ReplyPolicy | None
    """None: the front end's default."""
    current_branch: str = MAIN_BRANCH


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


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryView:
    """One long-term memory as ``/memory`` shows it; ``id`` is what ``forget_memory`` takes."""

    id: str
    kind: MemoryKindName
    text: str
    scope: Scope
    importance: float


OnText = Callable[[str], Awaitable[None]]
"""Streaming callback: receives the reply's visible text so far, after each chunk."""
OnSpeaker = Callable[[str], Awaitable[None]]
"""Group callback: the name of the member whose reply starts now (``on_text`` streams it)."""
OnReply = Callable[["ReplyView"], Awaitable[None]]
"""Group callback: one reply of the turn, committed (each reply is its own floor)."""

STOP_TURN: Final = "stop the turn, keep what was streamed"
"""The message a front end cancels a turn's task with (``task.cancel(STOP_TURN)``) to stop its
generation as a user's Stop button does: the text streamed so far is kept as the page's reply,
with ``stopped: true`` in its meta. Any other cancellation (or a stop before the first token)
fails the turn as before."""
