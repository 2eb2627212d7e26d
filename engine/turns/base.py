"""Shared state of :class:`~engine.turns.service.TavernService`: the storage, the services it
builds on, the caches of session and branch ids, and small helpers its parts use."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from engine.clock import SystemClock
from engine.errors import EngineError
from engine.memory.lineage import Viewpoint
from engine.memory.service import MemoryService
from engine.ports import Clock, Event, EventSink, RandomSource, Storage
from engine.prompt.inputs import MemoryItem
from engine.timeline.assets import AssetService
from engine.timeline.errors import TimelineNotFoundError
from engine.timeline.history import HistoryService
from engine.timeline.leases import LeaseKeeper
from engine.timeline.service import TimelineService
from engine.timeline.values import Branch, Session, SessionSettings
from engine.turns.api import SessionKey
from engine.turns.context import TurnRead
from engine.turns.locks import BranchLocks
from engine.turns.options import MAX_MEMORY_BUDGET as MAX_MEMORY_BUDGET
from engine.turns.options import MEMORY_BUDGET as MEMORY_BUDGET
from engine.turns.options import SessionDefaults, memory_enabled
from engine.turns.profile_store import snapshot_for
from engine.turns.profiles import (
    DEFAULT_ENABLED_SLOTS,
    SLOTS,
    LLMProfile,
    NoSecretCipher,
    ProfileSnapshot,
    SecretCipher,
    Slot,
    Stage,
    stages_for_turn,
)
from engine.turns.workflow import ModelFor
from engine.variables.service import VariableService

log = logging.getLogger(__name__)

MAX_INPUT_CHARS: Final = 32_000
"""One user message longer than this is refused."""
MEMORY_RECENT_LINES: Final = 6
"""Recent chat lines memory retrieval ranks relevance against (with the new message)."""


MEMORY_STAGES: Final[frozenset[Stage]] = frozenset({"memory_retrieval", "memory_agent"})
"""The stages a session with its memory off leaves out."""


def session_stages(settings: SessionSettings) -> tuple[Stage, ...]:
    """The stages a turn of a session runs: by its prompt mode and enabled slots, without
    the memory stages when its memory is off."""
    stages = stages_for_turn(settings.prompt_mode, _enabled_slots(settings))
    if memory_enabled(settings):
        return stages
    return tuple(s for s in stages if s not in MEMORY_STAGES)


def _enabled_slots(settings: SessionSettings) -> tuple[Slot, ...]:
    slots = settings.extra.get("slots")
    if isinstance(slots, list | tuple):
        return tuple(s for s in SLOTS if s in slots)
    return tuple(s for s in SLOTS if s in DEFAULT_ENABLED_SLOTS)


class _Null:
    def emit(self, event: Event) -> None:
        """Drop the event."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionIds:
    session_id: int
    realm_id: int


class ServiceBase:
    """The state and helpers every part of the service uses."""

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
    ) -> None:
        self.storage = storage
        # What every session this service creates starts with; existing sessions keep theirs.
        self.session_defaults = session_defaults or SessionDefaults()
        self.events: EventSink = events or _Null()
        self.clock: Clock = clock or SystemClock()
        # This process's lease: the floors and pages it opens carry its owner id, so another
        # process's start-up recovery leaves them alone while it lives.
        self.leases = LeaseKeeper(storage, clock=self.clock)
        self.timeline = TimelineService(storage, self.events, owner=self.leases.owner)
        self._recover_only: SessionKey | None = None  # the session recovery is limited to
        self.history_service = HistoryService(storage)
        self.variables_service = VariableService(storage)
        self.assets = AssetService(storage)
        self.model_for = model_for
        self.default_profile = default_profile
        self.rng: RandomSource = rng or random.Random()
        self.cipher: SecretCipher = cipher or NoSecretCipher()
        self.locks = BranchLocks()
        self.memory = memory
        # After-commit memory work runs in owned tasks so the reply is not held up by it.
        self._background: set[asyncio.Task[None]] = set()
        self._ids: dict[SessionKey, SessionIds] = {}
        self._branches: dict[tuple[int, str], Branch] = {}

    def _emit(self, name: str, **payload: Any) -> None:
        self.events.emit(Event(name=name, payload=payload))

    async def _session(self, key: SessionKey) -> SessionIds:
        ids = self._ids.get(key)
        if ids is None:
            found = await self.timeline.find_session(key.platform, key.key)
            if found is None:
                raise TimelineNotFoundError(f"no session {key.platform}:{key.key}; start it first")
            ids = self._ids[key] = SessionIds(session_id=found.id, realm_id=found.realm_id)
        return ids

    async def _branch(self, session_id: int, name: str) -> Branch:
        found = self._branches.get((session_id, name))
        if found is None:
            found = await self.timeline.branch(session_id, name)
            self._branches[(session_id, name)] = found
        return found

    async def _persona_description(self, realm_id: int, user_id: str | None) -> str:
        """The persona description of the player with platform user id ``user_id`` ("" when
        none); the front-end operations know personas and override this."""
        return ""

    async def _settings(self, session_id: int) -> Session:
        async with self.storage.unit_of_work() as uow:
            return await uow.sessions.get(session_id)

    async def _update(self, session_id: int, **changes: Any) -> Session:
        session = await self._settings(session_id)
        data = session.settings.to_json()
        data.update(changes)
        return await self.timeline.update_settings(session_id, SessionSettings.from_json(data))

    async def _retrieve(
        self, view: Viewpoint, read: TurnRead, budget: int | None, *, mark_used: bool = True
    ) -> tuple[MemoryItem, ...]:
        """Step 3: the memory block for this turn within the session's ``memory_budget``
        tokens (the memory service's default when unset; none when memory cannot be read).
        A dry run passes ``mark_used=False``: looking must not feed decay."""
        assert self.memory is not None
        recent = [line.text for line in read.history[-MEMORY_RECENT_LINES:]]
        try:
            block = await self.memory.retrieve(
                view,
                read.user_input or "",
                recent_turns=recent,
                budget=budget,
                mark_used=mark_used,
            )
        except EngineError as exc:
            log.warning("memory retrieval failed, the turn goes on without it: %s", exc)
            return ()
        if not block.text:
            return ()
        return (MemoryItem(id=",".join(block.record_ids) or "memory", text=block.text),)

    def _snapshot(self, session: Session, data: Mapping[str, Any]) -> ProfileSnapshot:
        return snapshot_for(
            data, session_id=session.id, realm_id=session.realm_id, default=self.default_profile
        )
