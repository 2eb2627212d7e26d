"""A session's branches: forking, reading one back (its history), the session's current
branch, and resetting the main branch."""

from __future__ import annotations

from engine.ports import EventSink, Storage
from engine.timeline.history import HistoryService
from engine.timeline.service import TimelineService
from engine.timeline.values import MAIN_BRANCH
from engine.turns.api import BranchInfo, ReplyView, SessionKey
from engine.turns.events import emit
from engine.turns.locks import BranchOrder
from engine.turns.sessions import CURRENT_BRANCH_SETTING, Sessions
from engine.turns.views import views_of
from engine.variables.service import VariableService

__all__ = ["Branches"]


class Branches:
    """Forks, branch history, the current branch and the reset of the main branch."""

    def __init__(
        self,
        storage: Storage,
        sessions: Sessions,
        timeline: TimelineService,
        history: HistoryService,
        variables: VariableService,
        locks: BranchOrder,
        *,
        events: EventSink,
    ) -> None:
        self._storage = storage
        self._sessions = sessions
        self._timeline = timeline
        self._history = history
        self._variables = variables
        self._locks = locks
        self._events = events

    async def fork(
        self, key: SessionKey, branch: str, *, after_floor: int | None, name: str
    ) -> BranchInfo:
        """Create branch ``name`` forking ``branch`` after ``after_floor`` (None: latest)."""
        _, source = await self._sessions.target(key, branch)
        created = await self._timeline.fork(source.id, name=name, after_floor=after_floor)
        return BranchInfo(
            name=created.name,
            parent=branch,
            fork_floor=created.fork_floor,
            floors=created.fork_floor or 0,
        )

    async def history(
        self, key: SessionKey, branch: str, *, limit: int = 50, include_hidden: bool = False
    ) -> list[ReplyView]:
        """The active pages along the branch, oldest first (hidden floors left out unless
        ``include_hidden``)."""
        _, target = await self._sessions.target(key, branch)
        floors = await self._history.history(target.id, limit=limit)
        return views_of(key, floors, include_hidden=include_hidden)

    async def current(self, key: SessionKey) -> str:
        """The branch the session plays on when the platform does not name one."""
        return await self._sessions.current_branch(key)

    async def set_current(self, key: SessionKey, branch: str) -> None:
        """Switch the session's current branch; NotFoundError when it has no such branch."""
        ids, _ = await self._sessions.target(key, branch)  # raises when it does not exist
        await self._sessions.update(ids.session_id, **{CURRENT_BRANCH_SETTING: branch})

    async def reset(self, key: SessionKey) -> None:
        """Start the main branch over: its floors are hidden (kept) and its branch-scope
        variables deleted (the deletions are logged, so history can show them); the main
        branch becomes the current one again."""
        ids, target = await self._sessions.target(key, MAIN_BRANCH)
        async with self._locks.hold(ids.session_id, MAIN_BRANCH):
            async with self._storage.unit_of_work() as uow:
                for floor in await uow.floors.committed(target.id, 1, None):
                    await uow.floors.set_hidden(floor.id, True)
                names = list(await uow.variables.values("branch", target.id))
            for name in names:
                await self._variables.delete(target.id, "branch", name)
        await self._sessions.update(ids.session_id, **{CURRENT_BRANCH_SETTING: MAIN_BRANCH})
        emit(self._events, "session.reset", session=key.key)
