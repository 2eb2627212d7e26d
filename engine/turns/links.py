"""Platform messages and the floors they show: linking a sent message to its floor and page,
mapping one back, hiding what a platform deletion hides, and who spoke on a floor."""

from __future__ import annotations

from collections.abc import Iterable

from engine.errors import NotFoundError
from engine.group.settings import MAX_GROUP_MEMBERS
from engine.ports import Storage, UnitOfWork
from engine.timeline.history import HistoryService
from engine.timeline.values import Branch, Floor, Message
from engine.turns.api import PlatformRef, SessionKey, Speaker
from engine.turns.sessions import Sessions
from engine.turns.views import page_number, shown_index
from engine.variables import store

__all__ = ["PlatformLinks", "locate_floor"]


class PlatformLinks:
    """The map between platform message ids and floors and pages of a session."""

    def __init__(self, storage: Storage, sessions: Sessions, history: HistoryService) -> None:
        self._storage = storage
        self._sessions = sessions
        self._history = history

    async def link(self, key: SessionKey, platform_ref: str, ref: PlatformRef) -> None:
        """Remember that platform message ``platform_ref`` shows ``ref``."""
        ids, target = await self._sessions.target(key, ref.branch)
        async with self._storage.unit_of_work() as uow:
            floor, page_id = await locate_floor(uow, target, ref.floor, ref.page)
        await self._history.link_message(
            ids.session_id, platform_ref, floor_id=floor.id, page_id=page_id, role=ref.role
        )

    async def resolve(self, key: SessionKey, platform_ref: str) -> PlatformRef | None:
        """Map a platform message back to its floor and page."""
        ids = await self._sessions.ids(key)
        async with self._storage.unit_of_work() as uow:
            link = await uow.links.get(ids.session_id, platform_ref)
            if link is None:
                return None
            floor = await uow.floors.get(link.floor_id)
            branch = await uow.branches.get(link.branch_id)
            number: int | None = None
            if link.page_id is not None:
                shown = await uow.pages.get(link.page_id)
                number = shown_index(await uow.pages.of_floors([floor.id]), shown.number)
        return PlatformRef(branch=branch.name, floor=floor.seq, page=number, role=link.role)

    async def hide(self, key: SessionKey, platform_ref: str) -> None:
        """A platform deletion: hide the floor or page it maps to (never delete)."""
        ids = await self._sessions.ids(key)
        await self._history.hide_message(ids.session_id, platform_ref)

    async def speakers(self, key: SessionKey, branch: str, floor: int) -> list[Speaker]:
        """Who wrote the input of floor ``floor`` as the branch sees it, each speaker once in
        the order they spoke; NotFoundError when the branch has no such floor. A group's
        reply floor holds no input: its speakers are those of the nearest floor before it
        that has some (the message its turn answered), at most :data:`MAX_GROUP_MEMBERS`
        floors back."""
        _, target = await self._sessions.target(key, branch)
        async with self._storage.unit_of_work() as uow:
            found, _ = await locate_floor(uow, target, floor, None)
            speakers = _input_speakers(await uow.messages.of_floors([found.id]))
            if speakers or found.speaker is None:
                return speakers
            lineage = await store.lineage_of(uow, target)
            low = max(1, floor - MAX_GROUP_MEMBERS)
            earlier = [f for f, _ in await store.lineage_pages(uow, lineage, low, floor - 1)]
            messages = await uow.messages.of_floors([f.id for f in earlier])
        by_floor: dict[int, list[Message]] = {}
        for m in messages:
            by_floor.setdefault(m.floor_id, []).append(m)
        for before in sorted(earlier, key=lambda f: f.seq, reverse=True):
            speakers = _input_speakers(by_floor.get(before.id, []))
            if speakers:
                return speakers
        return []


def _input_speakers(messages: Iterable[Message]) -> list[Speaker]:
    """The authors of the user input among ``messages``, each once in the order they spoke."""
    speakers: dict[str, Speaker] = {}
    for m in sorted(messages, key=lambda m: m.seq):
        if m.page_id is not None or m.role != "user":
            continue
        ident = m.speaker_id or m.speaker_name or ""
        if ident and ident not in speakers:
            speakers[ident] = Speaker(id=m.speaker_id or "", name=m.speaker_name or "User")
    return list(speakers.values())


async def locate_floor(
    uow: UnitOfWork, branch: Branch, seq: int, page: int | None
) -> tuple[Floor, int | None]:
    """The floor ``seq`` the branch sees (committed, or its own open floor) and the id of
    its page number ``page``."""
    lineage = await store.lineage_of(uow, branch)
    pairs = await store.lineage_pages(uow, lineage, seq, seq)
    floor: Floor | None = pairs[0][0] if pairs else None
    if floor is None:
        latest = await uow.floors.latest(branch.id)
        if latest is not None and latest.seq == seq:
            floor = latest
    if floor is None:
        # A failed floor keeps its number and input (issue 12): its messages link to it too,
        # so a reaction on the input finds the floor to retry (issue 13).
        newest = await uow.floors.newest(branch.id)
        if newest is not None and newest.seq == seq:
            floor = newest
    if floor is None:
        raise NotFoundError(f"branch {branch.name!r} has no floor {seq}")
    if page is None:
        return floor, None
    pages = await uow.pages.of_floors([floor.id])
    number = page_number(pages, page)
    for candidate in pages:
        if candidate.number == number:
            return floor, candidate.id
    raise NotFoundError(f"floor {seq} of branch {branch.name!r} has no page {page}")
