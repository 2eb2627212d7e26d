"""Page operations that generate nothing: swiping between the committed pages of a branch's
latest floor (or of an earlier reply of its latest group turn), putting the card's greetings
on floor 1 of an empty branch (see :mod:`engine.turns.greeting`), replacing the latest reply
by a text the user wrote (a new page: the original stays as a swipe) and hiding a floor. Each
holds the branch's turn lock, as a turn does."""

from __future__ import annotations

from typing import Final

from engine.errors import LimitExceededError, NotFoundError
from engine.ports import Storage
from engine.timeline.history import HistoryService
from engine.timeline.service import TimelineService
from engine.timeline.values import Floor, NewMessage
from engine.turns.api import ReplyView, SessionKey
from engine.turns.context import TIMED_STATE_META
from engine.turns.earlier import own_floor
from engine.turns.errors import NothingToDoError
from engine.turns.greeting import greet
from engine.turns.locks import BranchOrder
from engine.turns.sessions import Sessions
from engine.turns.turns import MAX_INPUT_CHARS
from engine.turns.views import reply_view
from engine.variables import store
from engine.variables.values import Mutation, Scope

__all__ = ["EDITED_FROM", "Pages"]

EDITED_FROM: Final = "edited_from"
"""Meta key of a page a user wrote over a reply: the number of the page it replaced."""
_PAGE_BOUND: tuple[Scope, ...] = ("page", "floor", "branch")
"""The scopes whose writes follow the active page: an edited page carries the replaced
page's writes in them, so the story's state does not change with its wording (chat and global
writes were applied once, when the original committed)."""


class Pages:
    """Swipes and greetings on a session's branches."""

    def __init__(
        self,
        storage: Storage,
        sessions: Sessions,
        timeline: TimelineService,
        history: HistoryService,
        locks: BranchOrder,
    ) -> None:
        self._storage = storage
        self._sessions = sessions
        self._timeline = timeline
        self._history = history
        self._locks = locks

    async def swipe(
        self, key: SessionKey, branch: str, step: int, *, floor: int | None = None
    ) -> ReplyView:
        """Activate the page ``step`` away on the latest floor (clamped to the first/last);
        ``floor``: an earlier member's reply of the latest group turn instead (None: the
        latest floor), whose variables the branch then follows under the later replies'."""
        ids, target = await self._sessions.target(key, branch)
        async with self._locks.hold(ids.session_id, branch):
            latest = await self._history.latest_floor(target.id)
            if floor is not None and (latest is None or latest.seq != floor):
                latest = await own_floor(self._history, target, floor, "swipe")
            if latest is None or latest.state != "committed":
                raise NothingToDoError(f"branch {branch!r} has no reply of its own to swipe")
            if latest.hidden:  # /del took it out of the story, as regenerate refuses it
                raise NothingToDoError(
                    f"floor {latest.seq} of branch {branch!r} is hidden; nothing to swipe"
                )
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

    async def edit_reply(self, key: SessionKey, branch: str, floor: int, text: str) -> ReplyView:
        """Replace the reply of the branch's latest floor ``floor`` by ``text``: a new active
        page with the replaced page's state (variable writes, timed world info), the original
        kept as a swipe. Only the latest floor takes new pages."""
        if not text.strip():
            raise NothingToDoError("an edited reply needs some text")
        if len(text) > MAX_INPUT_CHARS:
            raise LimitExceededError(
                f"an edited reply of {len(text)} characters is over "
                f"MAX_INPUT_CHARS={MAX_INPUT_CHARS}",
                limit="MAX_INPUT_CHARS",
                value=MAX_INPUT_CHARS,
            )
        ids, target = await self._sessions.target(key, branch)
        async with self._locks.hold(ids.session_id, branch):
            latest = await self._history.latest_floor(target.id)
            newest = await self._history.newest_floor(target.id)
            if latest is None or newest is None or newest.id != latest.id:
                raise NothingToDoError(f"branch {branch!r} has no reply of its own to edit")
            if floor > latest.seq:
                raise NothingToDoError(
                    f"branch {branch!r} has no floor {floor} (its latest is floor {latest.seq})"
                )
            if floor != latest.seq:
                raise NothingToDoError(
                    f"only the latest floor's reply can be edited (floor {latest.seq} on "
                    f"branch {branch!r}; floor {floor} is older)"
                )
            if latest.state != "committed" or latest.active_page is None:
                raise NothingToDoError(f"floor {floor} of branch {branch!r} has no reply yet")
            view = await self._history.floor_view(target.id, latest.seq)
            original = view.active
            if original is None:
                raise NothingToDoError(f"floor {floor} of branch {branch!r} has no reply yet")
            writes = await self._page_writes(original.id)
            character = next((m.speaker_name for m in view.replies if m.speaker_name), None)
            meta: dict[str, object] = {EDITED_FROM: original.number}
            if TIMED_STATE_META in original.meta:
                meta[TIMED_STATE_META] = original.meta[TIMED_STATE_META]
            page = await self._timeline.add_page(latest.id)
            try:
                await self._timeline.commit_page(
                    page.id,
                    messages=[NewMessage(role="assistant", raw=text, speaker_name=character)],
                    writes=writes,
                    meta=meta,
                )
            except BaseException:
                await self._timeline.fail_page(page.id, "the edit was not saved")
                raise
            edited = await self._history.floor_view(target.id, latest.seq)
        return reply_view(key, edited)

    async def _page_writes(self, page_id: int) -> list[Mutation]:
        """The writes page ``page_id`` made in the scopes that follow the active page."""
        writes: list[Mutation] = []
        async with self._storage.read() as uow:
            for scope in _PAGE_BOUND:
                writes.extend((await uow.variables.page_log([page_id], scope)).get(page_id, []))
        return writes

    async def hide_floor(self, key: SessionKey, branch: str, floor: int) -> None:
        """Hide floor ``floor`` of the branch: kept, left out of history, prompts and exports.
        A floor the branch shares with the branch it forked from is refused (hiding it there
        would change that story too)."""
        ids, target = await self._sessions.target(key, branch)
        async with self._locks.hold(ids.session_id, branch):
            found = await self._settled_floor(target.id, branch, floor)
            if found.branch_id != target.id:
                raise NothingToDoError(
                    f"floor {floor} comes from the branch {branch!r} forked from; only its own "
                    "floors can be hidden here"
                )
            if found.hidden:
                raise NothingToDoError(f"floor {floor} of branch {branch!r} is already hidden")
            async with self._storage.unit_of_work() as uow:
                await uow.floors.set_hidden(found.id, True)

    async def _settled_floor(self, branch_id: int, branch: str, floor: int) -> Floor:
        """Floor ``floor`` as branch ``branch_id`` sees it, committed or failed."""
        async with self._storage.read() as uow:
            lineage = await store.lineage_of(uow, await uow.branches.get(branch_id))
            pairs = await store.lineage_floors(uow, lineage, floor, floor)
        if not pairs:
            raise NotFoundError(f"branch {branch!r} has no floor {floor}")
        return pairs[-1][0]

    async def page_texts(self, key: SessionKey, branch: str, floor: int) -> list[str]:
        """The visible reply text of each committed page of floor ``floor``, in page order."""
        _, target = await self._sessions.target(key, branch)
        found = await self._settled_floor(target.id, branch, floor)
        async with self._storage.read() as uow:
            pages = await uow.pages.of_floors([found.id])
            messages = await uow.messages.of_floors([found.id])
        texts: list[str] = []
        for page in sorted(pages, key=lambda p: p.number):
            if page.status != "committed":
                continue
            replies = sorted(
                (m for m in messages if m.page_id == page.id and not m.hidden),
                key=lambda m: m.seq,
            )
            texts.append("\n".join(m.display for m in replies))
        return texts
