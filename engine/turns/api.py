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

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from engine.prompt.inputs import AuthorNote
from engine.prompt.macro_port import MacroMode as MacroMode  # re-exported: session options
from engine.timeline.values import MAIN_BRANCH as MAIN_BRANCH  # re-exported: one definition
from engine.turns.values import (
    MEMORY_LIST_LIMIT,
    REPLY_POLICIES,
    STOP_TURN,
    AssetKind,
    BranchInfo,
    ImportSummary,
    MemoryKindName,
    MemoryView,
    OnReply,
    OnSpeaker,
    OnText,
    OptionSpec,
    PlatformRef,
    ReplyPolicy,
    ReplyView,
    SessionInfo,
    SessionKey,
    SessionState,
    Speaker,
    UserLine,
    VariableWrite,
)
from engine.variables.values import Scope as Scope  # re-exported: front ends name scopes

# The values are defined in engine.turns.values; front ends import them from here.
__all__ = [
    "AssetKind",
    "BranchInfo",
    "ImportSummary",
    "MAIN_BRANCH",
    "MEMORY_LIST_LIMIT",
    "MacroMode",
    "MemoryKindName",
    "MemoryView",
    "OnReply",
    "OnSpeaker",
    "OnText",
    "OptionSpec",
    "PlatformRef",
    "REPLY_POLICIES",
    "ReplyPolicy",
    "ReplyView",
    "RoleplayService",
    "STOP_TURN",
    "Scope",
    "SessionInfo",
    "SessionKey",
    "SessionState",
    "Speaker",
    "UserLine",
    "VariableWrite",
]


class RoleplayService(Protocol):
    """The engine's application service, shared by every front end."""

    async def open_session(self, key: SessionKey, *, character: str | None = None) -> SessionInfo:
        """Get or create the session (and its realm and main branch)."""
        ...

    async def session_info(self, key: SessionKey) -> SessionInfo:
        """Describe a session; NotFoundError when it does not exist."""
        ...

    async def session_state(self, key: SessionKey) -> SessionState | None:
        """The session's closed flag, character, reply policy and current branch, read from
        its row now (one read: front ends call it per message); None when it does not
        exist."""
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
