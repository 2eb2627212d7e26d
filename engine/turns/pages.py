"""Page operations that generate nothing: swiping between the committed pages of a branch's
latest floor, and putting the card's greetings on floor 1 of an empty branch (see
:mod:`engine.turns.greeting`). Both hold the branch's turn lock, as a turn does."""

from __future__ import annotations

from engine.ports import Storage
from engine.timeline.history import HistoryService
from engine.timeline.service import TimelineService
from engine.turns.api import ReplyView, SessionKey
from engine.turns.errors import NothingToDoError
from engine.turns.greeting import greet
from engine.turns.locks import BranchLocks
from engine.turns.sessions import Sessions
from engine.turns.views import reply_view

__all__ = ["Pages"]


class Pages:
    """Swipes and greetings on a session's branches."""

    def __init__(
        self,
        storage: Storage,
        sessions: Sessions,
        timeline: TimelineService,
        history: HistoryService,
        locks: BranchLocks,
    ) -> None:
        self._storage = storage
        self._sessions = sessions
        self._timeline = timeline
        self._history = history
        self._locks = locks

    async def swipe(self, key: SessionKey, branch: str, step: int) -> ReplyView:
        """Activate the page ``step`` away on the latest floor (clamped to the first/last)."""
        ids, target = await self._sessions.target(key, branch)
        async with self._locks.hold(ids.session_id, branch):
            latest = await self._history.latest_floor(target.id)
            if latest is None or latest.state != "committed":
                raise NothingToDoError(f"branch {branch!r} has no reply of its own to swipe")
            pages = [p for p in await self._history.pages(latest.id) if p.status == "committed"]
            numbers = [p.number for p in pages]
            index = numbers.index(latest.active_page) if latest.active_page in numbers else 0
            chosen = max(0, min(len(numbers) - 1, index + step))
            await self._timeline.activate_page(latest.id, numbers[chosen])
            view = await self._history.floor_view(target.id, latest.seq)
        return reply_view(key, view)

    async def greet(self, key: SessionKey, branch: str, *, user_name: str) -> ReplyView | None:
        """Open an empty branch with the character's greeting(s) as floor 1 (see
        :mod:`engine.turns.greeting`); None when there is nothing to greet with."""
        ids, target = await self._sessions.target(key, branch)
        async with self._locks.hold(ids.session_id, branch):
            return await greet(
                self._storage,
                self._timeline,
                self._history,
                key,
                ids.session_id,
                target,
                user_name=user_name,
            )
