"""``TavernService``: the engine's :class:`~engine.turns.api.RoleplayService`, on the ports.

A turn (DESIGN.md section 6, seed 003 section 7), with short transactions only::

    1  record the input on a new floor that is generating with its page 1, and read
       what the turn needs: assets, recent chat, variables, timed state            (one unit)
    2-8  director, memory retrieval, assembly, narrator (streamed, tools), summary
       tags, regex scripts, verifier                                                (no unit)
    9  commit the page: messages, staged writes, meta; floor committed             (one unit)

Any failure fails the page (and a new floor with it), drops the staged writes and raises an
:class:`~engine.errors.EngineError` for the front end; the branch takes the next message.
One turn at a time per branch (:class:`~engine.turns.locks.BranchOrder`). A closed session
refuses turns (:class:`~engine.turns.errors.SessionClosedError`), and a speaker with a
persona in the realm is named by it (their ``{{user}}``) on the floor they write.

This class is a thin facade: every call is delegated to one of the services listed in
:mod:`engine.turns.parts` (``service.parts``), each named for what it owns.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from engine.clock import SystemClock
from engine.memory.service import MemoryService
from engine.ports import Clock, EventSink, RandomSource, Storage
from engine.prompt.inputs import AuthorNote
from engine.timeline.assets import AssetService
from engine.timeline.history import HistoryService
from engine.timeline.leases import LEASE_EXPIRY_S, LEASE_HEARTBEAT_S, LeaseKeeper
from engine.timeline.service import INTERRUPTED, INTERRUPTED_DRAFT, Claims, TimelineService
from engine.timeline.values import MAIN_BRANCH, Floor
from engine.turns.api import (
    MEMORY_LIST_LIMIT,
    AssetKind,
    BranchInfo,
    ImportSummary,
    MemoryView,
    OnReply,
    OnSpeaker,
    OnText,
    PlatformRef,
    ReplyView,
    Scope,
    SessionInfo,
    SessionKey,
    SessionState,
    Speaker,
    UserLine,
    VariableWrite,
)
from engine.turns.events import NullSink
from engine.turns.locks import BranchLocks, BranchOrder
from engine.turns.memory_access import MEMORY_RECENT_LINES
from engine.turns.options import OptionSpec, SessionDefaults
from engine.turns.parts import Parts, build_parts
from engine.turns.profiles import (
    BindingScope,
    LLMProfile,
    NoSecretCipher,
    ProfileSnapshot,
    SecretCipher,
    SlotPattern,
)
from engine.turns.turns import MAX_INPUT_CHARS
from engine.turns.workflow import ModelFor
from engine.variables.service import VariableService

__all__ = [
    "INTERRUPTED",
    "INTERRUPTED_DRAFT",
    "MAX_INPUT_CHARS",
    "MEMORY_RECENT_LINES",
    "SystemClock",
    "TavernService",
]


class TavernService:
    """The turn workflow and everything else a front end asks for (see the module doc).

    ``storage``, ``timeline``, ``history_service``, ``memory``, ``clock`` and ``events`` are
    the shared collaborators; ``parts`` holds the services the calls are delegated to."""

    def __init__(
        self,
        storage: Storage,
        *,
        model_for: ModelFor,
        default_profile: LLMProfile,
        events: EventSink | None = None,
        clock: Clock | None = None,
        rng: RandomSource | None = None,
        cipher: SecretCipher | None = None,
        memory: MemoryService | None = None,
        session_defaults: SessionDefaults | None = None,
        locks: BranchOrder | None = None,
        lease_heartbeat_s: float = LEASE_HEARTBEAT_S,
        lease_expiry_s: float = LEASE_EXPIRY_S,
    ) -> None:
        self.storage = storage
        self.events: EventSink = events or NullSink()
        self.clock: Clock = clock or SystemClock()
        self.memory = memory
        # This process's lease: the floors and pages it opens carry its owner id, so another
        # process's start-up recovery leaves them alone while it lives.
        self.leases = LeaseKeeper(
            storage, clock=self.clock, heartbeat_s=lease_heartbeat_s, expiry_s=lease_expiry_s
        )
        self.timeline = TimelineService(storage, self.events, owner=self.leases.owner)
        self.history_service = HistoryService(storage)
        self.parts: Parts = build_parts(
            storage,
            timeline=self.timeline,
            history=self.history_service,
            variables=VariableService(storage),
            assets=AssetService(storage),
            leases=self.leases,
            # In-process order unless the composition brings one that spans processes.
            locks=locks if locks is not None else BranchLocks(),
            memory=memory,
            model_for=model_for,
            default_profile=default_profile,
            session_defaults=session_defaults or SessionDefaults(),
            cipher=cipher or NoSecretCipher(),
            events=self.events,
            clock=self.clock,
            rng=rng or random.Random(),
        )

    # ----------------------------------------------------------------- lifecycle
    async def start(
        self, *, only: SessionKey | None = None, claims: Claims | None = None
    ) -> list[Floor]:
        """Take this process's lease, then fail the turns dead processes left in progress;
        ``only`` limits this, and every later :meth:`sweep`, to one session, ``claims(platform,
        realm)`` to the sessions whose chats this process can tell (None: all)."""
        return await self.parts.recovery.start(only=only, claims=claims)

    async def sweep(self) -> list[Floor]:
        """Fail the turns dead processes left in progress (the heartbeat runs this)."""
        return await self.parts.recovery.sweep()

    async def keep_lease(self) -> None:
        """Renew this process's lease and sweep until cancelled (run in an owned task)."""
        await self.parts.recovery.keep()

    async def release_lease(self) -> None:
        """Give the lease up on a clean stop (after the last turn of this process ended)."""
        await self.parts.recovery.release()

    async def drain(self, timeout_s: float = 30.0) -> None:
        """Wait for after-commit memory work still running (up to ``timeout_s``)."""
        await self.parts.memory.drain(timeout_s)

    async def aclose(self, grace_s: float = 5.0) -> None:
        """Let after-commit memory work finish briefly, then cancel what is left."""
        await self.parts.memory.aclose(grace_s)

    # ----------------------------------------------------------------- turns
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
        """Record ``lines`` as one new floor, generate and commit the reply (in a group, each
        chosen member's reply on its own floor, or the ``called`` members'; the last one's
        view is returned)."""
        return await self.parts.turns.respond(
            key,
            branch,
            lines,
            on_text=on_text,
            on_speaker=on_speaker,
            on_reply=on_reply,
            called=called,
        )

    async def speak(
        self,
        key: SessionKey,
        branch: str,
        name: str,
        *,
        on_text: OnText | None = None,
        on_reply: OnReply | None = None,
    ) -> ReplyView:
        """Make the character ``name`` answer now, on a new floor."""
        return await self.parts.turns.speak(key, branch, name, on_text=on_text, on_reply=on_reply)

    async def add_member(self, key: SessionKey, name: str) -> SessionInfo:
        """Add a realm card to the session's group (a solo session becomes a group)."""
        return await self.parts.members.add(key, name)

    async def remove_member(self, key: SessionKey, name: str) -> SessionInfo:
        """Take a member out of the group (one left: the session is solo again)."""
        return await self.parts.members.remove(key, name)

    async def mute_member(self, key: SessionKey, name: str, muted: bool) -> SessionInfo:
        """Mute or unmute a member of the group."""
        return await self.parts.members.mute(key, name, muted)

    async def set_group_strategy(self, key: SessionKey, strategy: str) -> SessionInfo:
        """Set the group's activation strategy."""
        return await self.parts.members.set_strategy(key, strategy)

    async def set_group_mode(self, key: SessionKey, mode: str) -> SessionInfo:
        """Set the group's generation mode."""
        return await self.parts.members.set_mode(key, mode)

    async def regenerate(
        self,
        key: SessionKey,
        branch: str,
        *,
        floor: int | None = None,
        on_text: OnText | None = None,
    ) -> ReplyView:
        """Add a page to the branch's latest floor (a failed one: retry its input), or to
        ``floor``, an earlier member's reply of the latest group turn."""
        return await self.parts.turns.regenerate(key, branch, floor=floor, on_text=on_text)

    async def continue_reply(
        self, key: SessionKey, branch: str, *, on_text: OnText | None = None
    ) -> ReplyView:
        """Extend the latest reply on a new page."""
        return await self.parts.turns.continue_reply(key, branch, on_text=on_text)

    async def edit_and_regenerate(
        self,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
    ) -> ReplyView:
        """Answer an edited latest input on a new branch forked before its floor."""
        return await self.parts.turns.edit_and_regenerate(key, branch, lines, on_text=on_text)

    async def swipe(
        self, key: SessionKey, branch: str, step: int, *, floor: int | None = None
    ) -> ReplyView:
        """Activate the page ``step`` away on the latest floor (clamped), or on ``floor``,
        an earlier member's reply of the latest group turn."""
        return await self.parts.pages.swipe(key, branch, step, floor=floor)

    async def edit_reply(self, key: SessionKey, branch: str, floor: int, text: str) -> ReplyView:
        """Replace the latest floor's reply by ``text`` as a new page (the original stays)."""
        return await self.parts.pages.edit_reply(key, branch, floor, text)

    async def hide_floor(self, key: SessionKey, branch: str, floor: int) -> None:
        """Hide one of the branch's own floors (kept, left out of history and prompts)."""
        await self.parts.pages.hide_floor(key, branch, floor)

    async def page_texts(self, key: SessionKey, branch: str, floor: int) -> list[str]:
        """The reply text of each committed page of a floor, in page order."""
        return await self.parts.pages.page_texts(key, branch, floor)

    async def impersonate(
        self,
        key: SessionKey,
        branch: str,
        *,
        user_name: str | None = None,
        on_text: OnText | None = None,
    ) -> str:
        """The model's draft of the user's next message; nothing is committed."""
        return await self.parts.previews.impersonate(
            key, branch, user_name=user_name, on_text=on_text
        )

    async def greet(
        self, key: SessionKey, branch: str = MAIN_BRANCH, *, user_name: str = "User"
    ) -> ReplyView | None:
        """The character's greeting(s) as floor 1 of an empty branch, or None."""
        return await self.parts.pages.greet(key, branch, user_name=user_name)

    # ----------------------------------------------------------------- sessions
    async def open_session(self, key: SessionKey, *, character: str | None = None) -> SessionInfo:
        """Get or create the session; a closed session is reopened."""
        return await self.parts.sessions.open(key, character=character)

    async def session_info(self, key: SessionKey) -> SessionInfo:
        """Describe a session; NotFoundError when it does not exist."""
        return await self.parts.sessions.info(key)

    async def session_state(self, key: SessionKey) -> SessionState | None:
        """The session's row as front ends check it per message; None when it does not
        exist."""
        return await self.parts.sessions.state(key)

    async def close_session(self, key: SessionKey) -> None:
        """Close the session: kept, turns refused until it is opened again."""
        await self.parts.sessions.close(key)

    async def configure(self, key: SessionKey, **changes: Any) -> SessionInfo:
        """Change session settings by their stored names (checked first)."""
        return await self.parts.settings.configure(key, **changes)

    async def set_session_option(self, key: SessionKey, name: str, value: str) -> SessionInfo:
        """Set one session option by its user-facing name."""
        return await self.parts.settings.set_option(key, name, value)

    def session_option_specs(self) -> tuple[OptionSpec, ...]:
        """Every option ``set_session_option`` takes, with its values and help."""
        return self.parts.settings.option_specs()

    async def author_note(self, key: SessionKey) -> AuthorNote | None:
        """The session's Author's Note, or None."""
        return await self.parts.settings.author_note(key)

    async def set_author_note(self, key: SessionKey, note: AuthorNote | None) -> SessionInfo:
        """Set the session's Author's Note (None clears it)."""
        return await self.parts.settings.set_author_note(key, note)

    async def tools_global_writes(self, key: SessionKey) -> bool:
        """Whether the model's tools may write the realm's global variables here."""
        return await self.parts.settings.tools_global_writes(key)

    async def set_tools_global_writes(self, key: SessionKey, allowed: bool) -> SessionInfo:
        """Allow or refuse the model's tool writes to global variables."""
        return await self.parts.settings.set_tools_global_writes(key, allowed)

    # ----------------------------------------------------------------- branches
    async def fork(
        self, key: SessionKey, branch: str, *, after_floor: int | None, name: str
    ) -> BranchInfo:
        """Create branch ``name`` forking ``branch`` after ``after_floor`` (None: latest)."""
        return await self.parts.branches.fork(key, branch, after_floor=after_floor, name=name)

    async def history(
        self, key: SessionKey, branch: str, *, limit: int = 50, include_hidden: bool = False
    ) -> list[ReplyView]:
        """The active pages along the branch, oldest first (hidden floors left out unless
        ``include_hidden``)."""
        return await self.parts.branches.history(
            key, branch, limit=limit, include_hidden=include_hidden
        )

    async def current_branch(self, key: SessionKey) -> str:
        """The branch the session plays on when the platform does not name one."""
        return await self.parts.branches.current(key)

    async def set_current_branch(self, key: SessionKey, branch: str) -> None:
        """Switch the session's current branch; NotFoundError when it is unknown."""
        await self.parts.branches.set_current(key, branch)

    async def reset(self, key: SessionKey) -> None:
        """Start the main branch over (its floors hidden, its branch variables deleted)."""
        await self.parts.branches.reset(key)

    # ----------------------------------------------------------------- variables
    async def variables(
        self, key: SessionKey, branch: str, scope: Scope | None = None
    ) -> dict[str, Any]:
        """The merged view of all five scopes (scope None; the narrowest wins) or one
        scope, at the head of the branch."""
        return await self.parts.variables.read(key, branch, scope)

    async def set_variable(
        self, key: SessionKey, branch: str, name: str, value: Any, scope: Scope = "chat"
    ) -> None:
        """An explicit write to one scope."""
        await self.parts.variables.set(key, branch, name, value, scope)

    async def delete_variable(
        self, key: SessionKey, branch: str, name: str, scope: Scope = "chat"
    ) -> None:
        """An explicit delete in one scope."""
        await self.parts.variables.delete(key, branch, name, scope)

    async def variable_history(
        self, key: SessionKey, branch: str, name: str
    ) -> list[VariableWrite]:
        """Every write of ``name`` visible from the branch, oldest first."""
        return await self.parts.variables.history(key, branch, name)

    # ----------------------------------------------------------------- platform messages
    async def link_message(self, key: SessionKey, platform_ref: str, ref: PlatformRef) -> None:
        """Remember that platform message ``platform_ref`` shows ``ref``."""
        await self.parts.links.link(key, platform_ref, ref)

    async def resolve_message(self, key: SessionKey, platform_ref: str) -> PlatformRef | None:
        """Map a platform message back to its floor and page."""
        return await self.parts.links.resolve(key, platform_ref)

    async def hide_message(self, key: SessionKey, platform_ref: str) -> None:
        """A platform deletion: hide the floor or page it maps to (never delete)."""
        await self.parts.links.hide(key, platform_ref)

    async def floor_speakers(self, key: SessionKey, branch: str, floor: int) -> list[Speaker]:
        """Who wrote the input of a floor, each speaker once in the order they spoke."""
        return await self.parts.links.speakers(key, branch, floor)

    # ----------------------------------------------------------------- files, previews
    async def import_asset(
        self, key: SessionKey, kind: AssetKind, filename: str, data: bytes, *, bind: bool = True
    ) -> ImportSummary:
        """Import a SillyTavern file into the realm and (``bind``) use it in the session."""
        return await self.parts.transfer.import_asset(key, kind, filename, data, bind=bind)

    async def export_chat(
        self, key: SessionKey, branch: str, *, include_hidden: bool = False
    ) -> bytes:
        """The branch as SillyTavern JSONL (``include_hidden``: hidden messages too)."""
        return await self.parts.transfer.export_chat(key, branch, include_hidden=include_hidden)

    async def export_group(self, key: SessionKey) -> bytes:
        """The session's group as a SillyTavern group definition (``groups/<id>.json``)."""
        return await self.parts.transfer.export_group(key)

    async def preview(self, key: SessionKey, branch: str, text: str) -> str:
        """Evaluate macros in ``text`` (preview phase: no write persists)."""
        return await self.parts.previews.preview(key, branch, text)

    async def dry_run(self, key: SessionKey, branch: str, text: str) -> Mapping[str, Any]:
        """Assemble the prompt for ``text`` without calling the model or persisting."""
        return await self.parts.previews.dry_run(key, branch, text)

    # ----------------------------------------------------------------- realm assets
    async def list_assets(self, key: SessionKey, kind: AssetKind) -> list[str]:
        """Names of the realm's cards, presets, world books or regex sets."""
        return await self.parts.assets.names(key, kind)

    async def bind_asset(self, key: SessionKey, kind: AssetKind, name: str) -> SessionInfo:
        """Use a realm asset in the session; NotFoundError when the realm has none such."""
        return await self.parts.assets.bind(key, kind, name)

    async def unbind_asset(self, key: SessionKey, kind: AssetKind, name: str) -> SessionInfo:
        """Stop using an asset in the session (it stays in the realm)."""
        return await self.parts.assets.unbind(key, kind, name)

    async def character_picture(self, key: SessionKey, name: str) -> bytes | None:
        """The picture (PNG bytes) of the realm's card ``name``; None without one."""
        return await self.parts.assets.picture(key, name)

    # ----------------------------------------------------------------- personas
    async def set_persona(
        self, key: SessionKey, user_id: str, name: str, description: str = ""
    ) -> None:
        """Set the persona ``user_id`` plays in the realm of ``key``."""
        await self.parts.personas.set(key, user_id, name, description)

    async def persona(self, key: SessionKey, user_id: str) -> tuple[str, str] | None:
        """``(name, description)`` of ``user_id`` in the realm of ``key``, or None."""
        return await self.parts.personas.get(key, user_id)

    async def clear_persona(self, key: SessionKey, user_id: str) -> None:
        """Drop ``user_id``'s persona in the realm of ``key``; NotFoundError when none."""
        await self.parts.personas.clear(key, user_id)

    # ----------------------------------------------------------------- memory, profiles
    async def memories(
        self,
        key: SessionKey,
        branch: str,
        *,
        query: str | None = None,
        limit: int = MEMORY_LIST_LIMIT,
    ) -> list[MemoryView]:
        """The memories the head of ``branch`` sees (``query``: best matches first)."""
        return await self.parts.memory.memories(key, branch, query=query, limit=limit)

    async def forget_memory(self, key: SessionKey, memory_id: str) -> None:
        """Forget a memory of this session or its realm; NotFoundError for any other id."""
        await self.parts.memory.forget(key, memory_id)

    async def save_profile(
        self, key: SessionKey, profile: LLMProfile, *, api_key: str | None = None
    ) -> None:
        """Store an LLM profile in the session's realm (``api_key`` encrypted first)."""
        await self.parts.profiles.save(key, profile, api_key=api_key)

    async def bind_profile(
        self, key: SessionKey, *, scope: BindingScope, slot: SlotPattern, profile_id: str
    ) -> None:
        """Bind a profile to a slot (or ``*``) of this session or of its whole realm."""
        await self.parts.profiles.bind(key, scope=scope, slot=slot, profile_id=profile_id)

    async def profile_snapshot(self, key: SessionKey) -> ProfileSnapshot:
        """The profiles a turn of this session would use now."""
        return await self.parts.profiles.snapshot_of(key)
