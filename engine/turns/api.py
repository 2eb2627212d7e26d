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
from typing import Any, Final, Literal, Protocol, get_args

from engine.memory.injection import MEMORY_BUDGET_TOKENS
from engine.prompt.inputs import AuthorNote
from engine.prompt.macro_port import MacroMode as MacroMode  # re-exported: session options
from engine.timeline.values import MAIN_BRANCH as MAIN_BRANCH  # re-exported: one definition
from engine.variables.values import Scope as Scope  # re-exported: front ends name scopes

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
        on_speaker: OnSpeaker | None = None,
        on_reply: OnReply | None = None,
        called: Sequence[str] = (),
    ) -> ReplyView:
        """Record ``lines`` as one new floor, generate and commit the reply. In a group the
        members the strategy chooses answer one after another, each on its own floor
        (``on_speaker`` before each reply, ``on_reply`` after each commit); the last reply's
        view is returned (``unanswered`` when nobody answered). ``called`` names members the
        users called (a platform reply to a member's message): those answer instead, in that
        order, muted or not; names that are not members are ignored, and so is ``called`` in
        a solo session."""
        ...

    async def speak(
        self,
        key: SessionKey,
        branch: str,
        name: str,
        *,
        on_text: OnText | None = None,
        on_reply: OnReply | None = None,
    ) -> ReplyView:
        """Make the member ``name`` answer now, on a new floor (``/group speak NAME``)."""
        ...

    async def add_member(self, key: SessionKey, name: str) -> SessionInfo:
        """Add the realm's card ``name`` to the session's group (a solo session becomes a
        group, its character the first member)."""
        ...

    async def remove_member(self, key: SessionKey, name: str) -> SessionInfo:
        """Take ``name`` out of the session's group; with one member left the session is
        solo again, playing that member."""
        ...

    async def mute_member(self, key: SessionKey, name: str, muted: bool) -> SessionInfo:
        """Mute or unmute a member: a muted member speaks only when called with ``speak``."""
        ...

    async def set_group_strategy(self, key: SessionKey, strategy: str) -> SessionInfo:
        """Set who answers a turn: natural, list, pooled or manual."""
        ...

    async def set_group_mode(self, key: SessionKey, mode: str) -> SessionInfo:
        """Set how the members' cards enter the prompt: swap or join."""
        ...

    async def regenerate(
        self,
        key: SessionKey,
        branch: str,
        *,
        floor: int | None = None,
        on_text: OnText | None = None,
    ) -> ReplyView:
        """Add a page to the branch's latest floor by re-running its turn; ``floor``: an
        earlier member's reply of the latest group turn instead (None: the latest floor),
        the replies after it unchanged (refused when a later floor holds a user's message,
        a branch forks at or after it, or a later floor keeps a saved state)."""
        ...

    async def swipe(
        self, key: SessionKey, branch: str, step: int, *, floor: int | None = None
    ) -> ReplyView:
        """Activate the page ``step`` away (-1 previous, +1 next) on the latest floor, or on
        ``floor``, an earlier member's reply of the latest group turn (refused as
        :meth:`regenerate` is)."""
        ...

    async def continue_reply(
        self, key: SessionKey, branch: str, *, on_text: OnText | None = None
    ) -> ReplyView:
        """Extend the latest reply on a new page (the old text followed by the continuation)."""
        ...

    async def edit_and_regenerate(
        self,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
    ) -> ReplyView:
        """Answer an edited latest input on a new branch forked before its floor (the view
        names that branch); the original floor stays where it was."""
        ...

    async def edit_reply(self, key: SessionKey, branch: str, floor: int, text: str) -> ReplyView:
        """Replace the reply of the latest floor ``floor`` by ``text`` as a new active page;
        the original page stays as a swipe (nothing is lost). Only the latest floor takes
        new pages: an older ``floor`` is refused with one line saying so."""
        ...

    async def hide_floor(self, key: SessionKey, branch: str, floor: int) -> None:
        """Hide floor ``floor`` of the branch (kept, left out of history, prompts and exports);
        a floor the branch shares with the branch it forked from is refused."""
        ...

    async def page_texts(self, key: SessionKey, branch: str, floor: int) -> list[str]:
        """The reply text of each committed page of floor ``floor``, in page order."""
        ...

    async def impersonate(
        self,
        key: SessionKey,
        branch: str,
        *,
        user_name: str | None = None,
        on_text: OnText | None = None,
    ) -> str:
        """Have the model write the user's next message (SillyTavern's impersonate) as a
        draft: nothing is committed. ``user_name`` None: the branch's last speaker."""
        ...

    async def fork(
        self, key: SessionKey, branch: str, *, after_floor: int | None, name: str
    ) -> BranchInfo:
        """Create branch ``name`` forking ``branch`` after ``after_floor`` (None: latest)."""
        ...

    async def history(
        self, key: SessionKey, branch: str, *, limit: int = 50, include_hidden: bool = False
    ) -> list[ReplyView]:
        """The active pages along the branch, oldest first (at most ``limit`` floors);
        hidden floors are left out unless ``include_hidden``, then marked ``hidden``."""
        ...

    async def variables(
        self, key: SessionKey, branch: str, scope: Scope | None = None
    ) -> dict[str, Any]:
        """The merged view of all five scopes (scope None; the narrowest wins) or one
        scope, at the head of the branch."""
        ...

    async def set_variable(
        self, key: SessionKey, branch: str, name: str, value: Any, scope: Scope = "chat"
    ) -> None:
        """An explicit write to one scope (``/vars set``); a ``floor`` or ``page`` write lands
        on the latest floor and its active page at once (none yet: TimelineNotFoundError)."""
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
        self, key: SessionKey, kind: AssetKind, filename: str, data: bytes, *, bind: bool = True
    ) -> ImportSummary:
        """Import a SillyTavern file into the session's realm and (``bind``) bind it to the
        session; ``bind=False`` only stores it in the realm (a chat always gets its branch)."""
        ...

    async def preview(self, key: SessionKey, branch: str, text: str) -> str:
        """Evaluate macros in ``text`` (preview phase: no write persists); ``{{user}}`` is the
        branch's last speaker, as its next turn would name them ("User" before anyone spoke)."""
        ...

    async def dry_run(self, key: SessionKey, branch: str, text: str) -> Mapping[str, Any]:
        """Assemble the prompt for ``text`` without calling the model."""
        ...

    async def export_chat(
        self, key: SessionKey, branch: str, *, include_hidden: bool = False
    ) -> bytes:
        """The branch as SillyTavern JSONL. Hidden floors and pages (deleted platform
        messages, a reset) are left out, or with ``include_hidden`` written as SillyTavern
        writes hidden messages: ``"is_system": true`` (hidden pages stay among the swipes)."""
        ...

    async def export_group(self, key: SessionKey) -> bytes:
        """The session's group as a SillyTavern group definition (``groups/<id>.json``): an
        imported file keeps every field it had (``id``, ``chat_id``, ``chats``, ``fav``,
        unknown keys...) with the current members (their avatar file names, ``NAME.png`` for
        one added since), muted members, strategy, mode and self-responses; a group made here
        gets a new file. NotFoundError when the session plays fewer than two characters."""
        ...

    async def reset(self, key: SessionKey) -> None:
        """Start the main branch over: its floors are hidden (kept, left out of history,
        prompts and exports) and its branch-scope variables deleted (logged); other branches
        and the chat and global variables are untouched, and ``main`` becomes the current
        branch again."""
        ...

    async def greet(
        self, key: SessionKey, branch: str = MAIN_BRANCH, *, user_name: str = "User"
    ) -> ReplyView | None:
        """Put the character's greeting (alternates as pages) on floor 1 of an empty branch;
        None when the branch is not empty or the card has no greeting."""
        ...

    # ---------------------------------------------------------------- front-end operations

    async def set_persona(
        self, key: SessionKey, user_id: str, name: str, description: str = ""
    ) -> None:
        """Set the persona ``user_id`` plays in the realm of ``key`` (all its sessions)."""
        ...

    async def persona(self, key: SessionKey, user_id: str) -> tuple[str, str] | None:
        """``(name, description)`` of ``user_id``'s persona in the realm of ``key``, if set."""
        ...

    async def clear_persona(self, key: SessionKey, user_id: str) -> None:
        """Drop ``user_id``'s persona in the realm of ``key``; NotFoundError if none."""
        ...

    async def memories(
        self,
        key: SessionKey,
        branch: str,
        *,
        query: str | None = None,
        limit: int = MEMORY_LIST_LIMIT,
    ) -> list[MemoryView]:
        """The memories the head of ``branch`` sees (``query``: the best matches first)."""
        ...

    async def forget_memory(self, key: SessionKey, memory_id: str) -> None:
        """Forget one memory of this session or its realm; NotFoundError for any other id."""
        ...

    async def list_assets(self, key: SessionKey, kind: AssetKind) -> list[str]:
        """Names of the realm's assets of ``kind`` (cards, presets, world books, regex sets)."""
        ...

    async def bind_asset(self, key: SessionKey, kind: AssetKind, name: str) -> SessionInfo:
        """Use a realm asset in the session: set the character or preset, attach a world book
        or regex set. NotFoundError when the realm has no such asset."""
        ...

    async def unbind_asset(self, key: SessionKey, kind: AssetKind, name: str) -> SessionInfo:
        """Stop using an asset in the session (the asset stays in the realm)."""
        ...

    async def character_picture(self, key: SessionKey, name: str) -> bytes | None:
        """The picture of the realm's card ``name`` as PNG bytes (a PNG card keeps its image),
        for a character's avatar; None for a card without one (JSON) or no card by that name."""
        ...

    async def current_branch(self, key: SessionKey) -> str:
        """The branch the session plays on when the platform does not say (``main``)."""
        ...

    async def set_current_branch(self, key: SessionKey, branch: str) -> None:
        """Switch the session's current branch (persisted); NotFoundError if it is unknown."""
        ...

    async def set_session_option(self, key: SessionKey, name: str, value: str) -> SessionInfo:
        """Set one session option by its user-facing name (``mode``, ``tools``, ``memory``,
        ``budget``, ``macros``, ``policy``, ``global_writes``; the settings' long names too);
        ConfigurationError, one line naming the option and its values, when either is bad."""
        ...

    def session_option_specs(self) -> tuple[OptionSpec, ...]:
        """The options ``set_session_option`` takes, their values and help (autocomplete)."""
        ...

    async def author_note(self, key: SessionKey) -> AuthorNote | None:
        """The session's Author's Note (SillyTavern's per-chat note), or None."""
        ...

    async def set_author_note(self, key: SessionKey, note: AuthorNote | None) -> SessionInfo:
        """Set the session's Author's Note, or clear it with None. Values out of range are
        refused with a ConfigurationError naming the field (see :mod:`engine.turns.notes`)."""
        ...

    async def tools_global_writes(self, key: SessionKey) -> bool:
        """Whether the model's tools may write the realm's global variables here (default no)."""
        ...

    async def set_tools_global_writes(self, key: SessionKey, allowed: bool) -> SessionInfo:
        """Allow or refuse the model's tool writes to global variables (game masters only)."""
        ...

    async def close_session(self, key: SessionKey) -> None:
        """Close the session (kept, marked closed): turns are refused until it is reopened."""
        ...

    async def floor_speakers(self, key: SessionKey, branch: str, floor: int) -> list[Speaker]:
        """Who wrote the input of a floor (first message first, each speaker once)."""
        ...
