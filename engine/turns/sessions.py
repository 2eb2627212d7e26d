"""Sessions and their branches as the turn services find them: the per-process caches of
session and branch ids, the session's settings (read and updated), opening, describing and
closing a session.

Several processes may serve one database, so only what never changes is cached here: a
session key's ids and a branch's row (branches are never renamed nor deleted). Everything a
session's settings say (the closed flag, a key of the settings JSON, and the current branch) is
read through: one primary-key read per turn, so a session closed or switched by another
process is seen by the next turn here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from engine.group.settings import group_of
from engine.ports import EventSink, Storage
from engine.timeline.errors import TimelineNotFoundError
from engine.timeline.service import TimelineService
from engine.timeline.values import MAIN_BRANCH, Branch, Session
from engine.turns.api import (
    REPLY_POLICIES,
    BranchInfo,
    ReplyPolicy,
    SessionInfo,
    SessionKey,
    SessionState,
)
from engine.turns.errors import SessionClosedError
from engine.turns.events import emit
from engine.turns.notes import session_note
from engine.turns.options import SessionDefaults, memory_budget, memory_enabled, tools_enabled
from engine.turns.tools import TOOLS_GLOBAL_WRITES
from engine.variables import store

__all__ = [
    "CLOSED_SETTING",
    "CURRENT_BRANCH_SETTING",
    "SessionIds",
    "Sessions",
]

CLOSED_SETTING: Final = "closed"
"""Session setting set while the session is closed (``/tavern stop``)."""
CURRENT_BRANCH_SETTING: Final = "current_branch"
"""Session setting naming the branch a chat without threads or topics plays on."""

_POLICIES: Final[Mapping[str, ReplyPolicy]] = {p: p for p in REPLY_POLICIES}


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionIds:
    """The storage ids of a session and of its realm."""

    session_id: int
    realm_id: int


class Sessions:
    """Finds sessions and branches (cached), reads and updates settings, opens and closes."""

    def __init__(
        self,
        storage: Storage,
        timeline: TimelineService,
        *,
        defaults: SessionDefaults,
        events: EventSink,
    ) -> None:
        self._storage = storage
        self._timeline = timeline
        # What every session created here starts with; existing sessions keep theirs.
        self._defaults = defaults
        self._events = events
        # Immutable once stored (see the module docstring): safe to keep in every process.
        self._ids: dict[SessionKey, SessionIds] = {}
        self._branches: dict[tuple[int, str], Branch] = {}

    @property
    def storage(self) -> Storage:
        """The storage the sessions are read from (for reads joined to a session's)."""
        return self._storage

    async def ids(self, key: SessionKey) -> SessionIds:
        """The ids of the session ``key``; TimelineNotFoundError when it was never started."""
        ids = self._ids.get(key)
        if ids is None:
            found = await self._timeline.find_session(key.platform, key.key)
            if found is None:
                raise TimelineNotFoundError(f"no session {key.platform}:{key.key}; start it first")
            ids = self._ids[key] = SessionIds(session_id=found.id, realm_id=found.realm_id)
        return ids

    async def branch(self, session_id: int, name: str) -> Branch:
        """The session's branch ``name``; NotFoundError when it has none of that name."""
        found = self._branches.get((session_id, name))
        if found is None:
            found = await self._timeline.branch(session_id, name)
            self._branches[(session_id, name)] = found
        return found

    async def target(self, key: SessionKey, branch: str) -> tuple[SessionIds, Branch]:
        """The session's ids and its branch ``branch``."""
        ids = await self.ids(key)
        return ids, await self.branch(ids.session_id, branch)

    async def settings(self, session_id: int) -> Session:
        """The session as stored now (its settings with it)."""
        async with self._storage.read() as uow:
            return await uow.sessions.get(session_id)

    async def update(self, session_id: int, **changes: Any) -> Session:
        """Change some keys of the session's settings (the others are kept, and so is a
        change another process makes at the same time)."""
        return await self._timeline.change_settings(session_id, changes)

    async def open(self, key: SessionKey, *, character: str | None = None) -> SessionInfo:
        """Get or create the session (its realm and main branch with it); a closed session
        is reopened."""
        opened = await self._timeline.open_session(
            key.platform, key.realm, key.key, settings=self._defaults.settings()
        )
        ids = SessionIds(session_id=opened.session.id, realm_id=opened.realm.id)
        self._ids[key] = ids
        if opened.created:
            emit(self._events, "session.created", session_id=ids.session_id, key=key.key)
        if character is not None and opened.session.settings.character != character:
            await self.update(ids.session_id, character=character)
        info = await self.info(key)
        if not info.closed:
            return info
        await self.update(ids.session_id, **{CLOSED_SETTING: False})
        emit(self._events, "session.reopened", session=key.key)
        return await self.info(key)

    async def close(self, key: SessionKey) -> None:
        """Close the session: everything is kept, turns are refused with
        :class:`~engine.turns.errors.SessionClosedError` until :meth:`open` reopens it."""
        ids = await self.ids(key)
        await self.update(ids.session_id, **{CLOSED_SETTING: True})
        emit(self._events, "session.closed", session=key.key)

    async def refuse_closed(self, key: SessionKey) -> SessionIds:
        """The session's ids; SessionClosedError while the session is closed (read from the
        database each time: another process may have closed or reopened it)."""
        ids = await self.ids(key)
        self.refuse(key, await self.settings(ids.session_id))
        return ids

    @staticmethod
    def refuse(key: SessionKey, session: Session) -> None:
        """SessionClosedError when ``session`` (the row of ``key``, just read) is closed."""
        if session.settings.extra.get(CLOSED_SETTING):
            raise SessionClosedError(
                f"session {key.platform}:{key.key} is closed; start it again to play"
            )

    async def state(self, key: SessionKey) -> SessionState | None:
        """The session's :class:`SessionState` from its row (one read), None when ``key``
        has no session."""
        ids = self._ids.get(key)
        if ids is None:
            session = await self._timeline.find_session(key.platform, key.key)
            if session is None:
                return None
            self._ids[key] = SessionIds(session_id=session.id, realm_id=session.realm_id)
        else:
            session = await self.settings(ids.session_id)
        s = session.settings
        return SessionState(
            key=key,
            closed=bool(s.extra.get(CLOSED_SETTING)),
            character=s.character,
            reply_policy=_POLICIES.get(s.reply_policy or ""),
            current_branch=str(s.extra.get(CURRENT_BRANCH_SETTING) or MAIN_BRANCH),
        )

    async def current_branch(self, key: SessionKey) -> str:
        """The branch the session plays on when the platform does not name one (read from
        the session's row: another process may have switched it)."""
        ids = await self.ids(key)
        session = await self.settings(ids.session_id)
        return str(session.settings.extra.get(CURRENT_BRANCH_SETTING) or MAIN_BRANCH)

    async def info(self, key: SessionKey) -> SessionInfo:
        """Describe a session; NotFoundError when it does not exist."""
        ids = await self.ids(key)
        async with self._storage.unit_of_work() as uow:
            session = await uow.sessions.get(ids.session_id)
            branches = await uow.branches.list(session.id)
            infos: list[BranchInfo] = []
            names = {b.id: b.name for b in branches}
            for branch in branches:
                head = await store.head_of(uow, await store.lineage_of(uow, branch))
                infos.append(
                    BranchInfo(
                        name=branch.name,
                        parent=names.get(branch.parent_id) if branch.parent_id else None,
                        fork_floor=branch.fork_floor,
                        floors=head,
                    )
                )
        s = session.settings
        group = group_of(s.extra)
        return SessionInfo(
            key=key,
            character=s.character,
            preset=s.preset,
            worldbooks=tuple(s.worldbooks),
            branches=tuple(infos),
            prompt_mode=s.prompt_mode,
            macro_mode=s.macro_mode if s.macro_mode in ("full", "off") else "read_only",  # type: ignore[arg-type]
            reply_policy=_POLICIES.get(s.reply_policy or ""),
            tools=tools_enabled(s),
            memory=memory_enabled(s),
            memory_budget=memory_budget(s),
            tools_global_writes=s.extra.get(TOOLS_GLOBAL_WRITES) is True,
            closed=bool(s.extra.get(CLOSED_SETTING)),
            current_branch=str(s.extra.get(CURRENT_BRANCH_SETTING) or MAIN_BRANCH),
            author_note=session_note(s),
            members=group.members if group is not None else (),
            muted=group.muted if group is not None else (),
            strategy=group.strategy if group is not None else None,
            group_mode=group.mode if group is not None else None,
        )
