"""The services :class:`~engine.turns.service.TavernService` is made of, built and wired in
one place. Each is a plain class owning its own state; its collaborators come in through its
constructor, so the arrows between them are all here:

- :class:`~engine.turns.sessions.Sessions` — session and branch ids (cached), settings,
  open/close; every other part finds a session through it.
- :class:`~engine.turns.session_settings.SessionSettingsService` — checked setting changes,
  options, the Author's Note, global writes.
- :class:`~engine.turns.branches.Branches` — forks, history, current branch, reset.
- :class:`~engine.turns.personas.Personas` — the realm's personas (cached).
- :class:`~engine.turns.variables.Variables` — reads and explicit writes of variables.
- :class:`~engine.turns.assets.Assets` — the realm's assets a session uses.
- :class:`~engine.turns.members.Members` — a session's group: members, muting, strategy.
- :class:`~engine.turns.profile_store.ProfileStore` — LLM profiles and bindings.
- :class:`~engine.turns.memory_access.MemoryAccess` — retrieval, after-commit tasks, listing.
- :class:`~engine.turns.links.PlatformLinks` — platform message ids to floors and pages.
- :class:`~engine.turns.transfer.Transfer` — SillyTavern imports and exports.
- :class:`~engine.turns.previews.Previews` — macro previews and prompt dry runs.
- :class:`~engine.turns.turns.Turns` — respond, regenerate, continue, edit (failures
  recorded by :class:`~engine.turns.failures.TurnFailures`).
- :class:`~engine.turns.pages.Pages` — swipes and the greeting.
- :class:`~engine.turns.recovery.Recovery` — this process's lease and crash recovery.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.memory.service import MemoryService
from engine.ports import Clock, EventSink, RandomSource, Storage
from engine.timeline.assets import AssetService
from engine.timeline.history import HistoryService
from engine.timeline.leases import LeaseKeeper
from engine.timeline.service import TimelineService
from engine.turns.assets import Assets
from engine.turns.branches import Branches
from engine.turns.failures import TurnFailures
from engine.turns.links import PlatformLinks
from engine.turns.locks import BranchOrder
from engine.turns.members import Members
from engine.turns.memory_access import MemoryAccess
from engine.turns.options import SessionDefaults
from engine.turns.pages import Pages
from engine.turns.personas import Personas
from engine.turns.previews import Previews
from engine.turns.profile_store import ProfileStore
from engine.turns.profiles import LLMProfile, SecretCipher
from engine.turns.recovery import Recovery
from engine.turns.session_settings import SessionSettingsService
from engine.turns.sessions import Sessions
from engine.turns.transfer import Transfer
from engine.turns.turns import Turns
from engine.turns.variables import Variables
from engine.turns.workflow import ModelFor
from engine.variables.service import VariableService

__all__ = ["Parts", "build_parts"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Parts:
    """The services behind the facade, one field per thing they own."""

    sessions: Sessions
    settings: SessionSettingsService
    branches: Branches
    personas: Personas
    variables: Variables
    assets: Assets
    members: Members
    profiles: ProfileStore
    memory: MemoryAccess
    links: PlatformLinks
    transfer: Transfer
    previews: Previews
    turns: Turns
    pages: Pages
    recovery: Recovery


def build_parts(
    storage: Storage,
    *,
    timeline: TimelineService,
    history: HistoryService,
    variables: VariableService,
    assets: AssetService,
    leases: LeaseKeeper,
    locks: BranchOrder,
    memory: MemoryService | None,
    model_for: ModelFor,
    default_profile: LLMProfile,
    session_defaults: SessionDefaults,
    cipher: SecretCipher,
    events: EventSink,
    clock: Clock,
    rng: RandomSource,
) -> Parts:
    """Build every part on the shared storage-facing services, wired to each other."""
    sessions = Sessions(storage, timeline, defaults=session_defaults, events=events)
    branches = Branches(storage, sessions, timeline, history, variables, locks, events=events)
    personas = Personas(assets, sessions, events=events)
    profiles = ProfileStore(storage, sessions, default=default_profile, cipher=cipher)
    memory_access = MemoryAccess(memory, storage, sessions, model_for=model_for)
    return Parts(
        sessions=sessions,
        settings=SessionSettingsService(sessions, events=events),
        branches=branches,
        personas=personas,
        variables=Variables(sessions, variables, events=events),
        assets=Assets(sessions, assets, events=events),
        members=Members(sessions, assets, events=events),
        profiles=profiles,
        memory=memory_access,
        links=PlatformLinks(storage, sessions, history),
        transfer=Transfer(storage, sessions, timeline, assets, clock=clock),
        previews=Previews(
            storage,
            sessions,
            variables,
            memory_access,
            profiles,
            personas,
            model_for=model_for,
            events=events,
            clock=clock,
            rng=rng,
        ),
        turns=Turns(
            storage,
            sessions,
            timeline,
            history,
            locks=locks,
            branches=branches,
            personas=personas,
            profiles=profiles,
            memory=memory_access,
            failures=TurnFailures(timeline, events=events),
            model_for=model_for,
            events=events,
            clock=clock,
            rng=rng,
        ),
        pages=Pages(storage, sessions, timeline, history, locks),
        recovery=Recovery(leases, timeline, model=default_profile.model),
    )
