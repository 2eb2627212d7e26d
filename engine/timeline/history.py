"""Reading a branch's timeline, and mapping platform messages back onto it.

A floor is shown as the branch sees it: a fork shows the page it pinned on the floor it forked
after, even if the parent swiped since. Platform deletions hide a page or floor, never delete.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Final

from engine.errors import LimitExceededError
from engine.ports import Storage, UnitOfWork
from engine.timeline.errors import TimelineNotFoundError
from engine.timeline.lineage import Lineage
from engine.timeline.values import Floor, FloorView, LinkRole, Message, Page, PlatformLink
from engine.variables import store

MAX_HISTORY: Final = 1000
"""Floors one history call returns at most."""


class HistoryService:
    """Reads of floors along a branch, and the platform-message map."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    async def history(
        self, branch_id: int, *, limit: int = 50, before: int | None = None
    ) -> list[FloorView]:
        """The settled floors the branch sees, oldest first: the newest ``limit`` of them
        (ending before floor ``before`` when given), hidden ones included and flagged, failed
        ones included with their input and no reply (``floor.state`` says which)."""
        if not 1 <= limit <= MAX_HISTORY:
            raise LimitExceededError(
                f"history limit {limit} is outside 1..{MAX_HISTORY}",
                limit="MAX_HISTORY",
                value=MAX_HISTORY,
            )
        async with self._storage.read() as uow:
            branch = await uow.branches.get(branch_id)
            lineage = await store.lineage_of(uow, branch)
            last = await store.last_seen(uow, lineage)
            if before is not None:
                last = min(last, before - 1)
            if last < 1:
                return []
            return await _views(uow, lineage, max(1, last - limit + 1), last)

    async def floor_view(self, branch_id: int, seq: int) -> FloorView:
        """Committed floor ``seq`` as the branch sees it; TimelineNotFoundError if none."""
        async with self._storage.read() as uow:
            lineage = await store.lineage_of(uow, await uow.branches.get(branch_id))
            views = await _views(uow, lineage, seq, seq, failed=False)
        if not views:
            raise TimelineNotFoundError(
                f"branch {lineage.branch.name!r} has no committed floor {seq}"
            )
        return views[0]

    async def latest_floor(self, branch_id: int) -> Floor | None:
        """The branch's own newest floor that has not failed (draft, generating or
        committed), or None when it has none of its own."""
        async with self._storage.read() as uow:
            return await uow.floors.latest(branch_id)

    async def newest_floor(self, branch_id: int) -> Floor | None:
        """The branch's own newest floor in any state, a failed one included."""
        async with self._storage.read() as uow:
            return await uow.floors.newest(branch_id)

    async def floor(self, floor_id: int) -> Floor:
        """A floor by id."""
        async with self._storage.read() as uow:
            return await uow.floors.get(floor_id)

    async def pages(self, floor_id: int) -> list[Page]:
        """Every page of a floor, by number (failed and pending ones included)."""
        async with self._storage.read() as uow:
            return await uow.pages.of_floors([floor_id])

    # ------------------------------------------------------------------ platform messages

    async def link_message(
        self,
        session_id: int,
        platform_ref: str,
        *,
        floor_id: int,
        page_id: int | None,
        role: LinkRole,
    ) -> PlatformLink:
        """Remember that platform message ``platform_ref`` shows this floor's input
        (``page_id`` None) or this page's reply."""
        async with self._storage.unit_of_work() as uow:
            floor = await uow.floors.get(floor_id)
            link = PlatformLink(
                session_id=session_id,
                platform_ref=platform_ref,
                branch_id=floor.branch_id,
                floor_id=floor.id,
                page_id=page_id,
                role=role,
            )
            await uow.links.put(link)
        return link

    async def resolve_message(self, session_id: int, platform_ref: str) -> PlatformLink | None:
        """Where a platform message maps, if it is known."""
        async with self._storage.read() as uow:
            return await uow.links.get(session_id, platform_ref)

    async def hide_message(self, session_id: int, platform_ref: str) -> PlatformLink | None:
        """A platform deletion: hide the page (a reply) or the floor (an input) it maps to,
        and the messages carrying that reference. Nothing is deleted."""
        async with self._storage.unit_of_work() as uow:
            link = await uow.links.get(session_id, platform_ref)
            if link is None:
                return None
            if link.page_id is not None:
                await uow.pages.set_hidden(link.page_id, True)
            else:
                await uow.floors.set_hidden(link.floor_id, True)
            await uow.messages.hide_by_ref(link.floor_id, platform_ref)
            return link


async def _views(
    uow: UnitOfWork, lineage: Lineage, first: int, last: int, *, failed: bool = True
) -> list[FloorView]:
    pairs: list[tuple[Floor, Page | None]]
    if failed:
        pairs = await store.lineage_floors(uow, lineage, first, last)
    else:
        pairs = list(await store.lineage_pages(uow, lineage, first, last))
    if not pairs:
        return []
    floor_ids = [floor.id for floor, _ in pairs]
    pages: dict[int, list[Page]] = defaultdict(list)
    for page in await uow.pages.of_floors(floor_ids):
        pages[page.floor_id].append(page)
    messages: dict[int, list[Message]] = defaultdict(list)
    for message in await uow.messages.of_floors(floor_ids):
        messages[message.floor_id].append(message)
    names = {b.id: b.name for b in await uow.branches.list(lineage.branch.session_id)}
    views: list[FloorView] = []
    for floor, active in pairs:
        floor_messages = messages[floor.id]
        views.append(
            FloorView(
                floor=floor if active is None else replace(floor, active_page=active.number),
                branch_name=names.get(floor.branch_id, ""),
                inputs=tuple(m for m in floor_messages if m.page_id is None),
                pages=tuple(pages[floor.id]),
                replies=tuple(
                    m for m in floor_messages if active is not None and m.page_id == active.id
                ),
            )
        )
    return views
