"""The timeline service: sessions, branches, floors and pages, on the storage port only.

Every method is one short unit of work. A turn (:mod:`engine.turns`) opens its floor with
:func:`open_generating` inside the unit of work that also reads what the turn needs: the new
floor is ``generating`` at once, with the user's input and a pending page 1. It then calls the
model outside any transaction, staging variable writes in memory, and ends with one of::

    await timeline.commit_page(page.id, messages=replies, writes=staged)   # all or nothing
    await timeline.fail_page(page.id, "why")                        # the floor fails with it

:meth:`TimelineService.open_floor` makes a ``draft`` floor instead (a greeting, an import, a
failed turn's record of its input), moved on by ``start_generating`` and ``add_page`` or
failed by ``fail_floor``; both ways of opening share the same checks. A regenerate is
``add_page`` on the committed latest floor, then ``commit_page`` (the new page becomes active)
or ``fail_page`` (the floor keeps its old active page). A swipe is ``activate_page``. Refusals
raise the errors of :mod:`engine.timeline.errors`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from engine.errors import ConflictError, LimitExceededError
from engine.ports import Event, EventSink, Storage, UnitOfWork
from engine.timeline.checks import check_name, check_writes
from engine.timeline.earlier import check_earlier_floor
from engine.timeline.errors import (
    BranchBusyError,
    DuplicateNameError,
    PageTransitionError,
    StaleStateError,
    TimelineNotFoundError,
)
from engine.timeline.leases import LeaseKeeper
from engine.timeline.opening import next_floor, settle_new_floor
from engine.timeline.states import check_floor_transition, check_page_transition
from engine.timeline.values import (
    MAIN_BRANCH,
    Branch,
    Floor,
    FloorState,
    NewMessage,
    Page,
    PageContext,
    Realm,
    Session,
    SessionSettings,
)
from engine.variables import store
from engine.variables.values import (
    Mutation,
)

MAX_PAGES_PER_FLOOR: Final = 100
"""Swipes kept per floor; regenerating beyond this is refused."""
Claims = Callable[[str, str], bool]
"""Whether this process tells the chats of a session on ``(platform, realm key)``."""
INTERRUPTED: Final = "interrupted: the process stopped while this was generating"
INTERRUPTED_DRAFT: Final = "interrupted: the process stopped before this floor was generated"


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenedSession:
    """A session with its realm and main branch; ``created`` when this call made it."""

    realm: Realm
    session: Session
    main: Branch
    created: bool


class TimelineService:
    """Sessions, branches, floors and pages (see the module docstring for a turn)."""

    def __init__(
        self, storage: Storage, events: EventSink | None = None, *, owner: str | None = None
    ) -> None:
        self._storage = storage
        self._events = events
        # The process lease floors and pages opened here belong to (engine.timeline.leases).
        self.owner = owner

    def _emit(self, name: str, **payload: Any) -> None:
        if self._events is not None:
            self._events.emit(Event(name=name, payload=payload))

    # ------------------------------------------------------------------ sessions and branches

    async def open_session(
        self,
        platform: str,
        realm_key: str,
        key: str,
        *,
        settings: SessionSettings | None = None,
    ) -> OpenedSession:
        """Get the session ``(platform, key)``, or create it with its realm and main branch."""
        check_name(key, what="session")
        for attempt in range(2):
            try:
                async with self._storage.unit_of_work() as uow:
                    return await self._open_session(uow, platform, realm_key, key, settings)
            except ConflictError:
                # Another task created it between our read and our insert: read it now.
                if attempt:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _open_session(
        self,
        uow: UnitOfWork,
        platform: str,
        realm_key: str,
        key: str,
        settings: SessionSettings | None,
    ) -> OpenedSession:
        session = await uow.sessions.find(platform, key)
        if session is not None:
            main = await uow.branches.find(session.id, MAIN_BRANCH)
            if main is None:
                raise TimelineNotFoundError(f"session {platform}:{key} has no main branch")
            realm = await uow.realms.get(session.realm_id)
            return OpenedSession(realm=realm, session=session, main=main, created=False)
        realm = await uow.realms.find(platform, realm_key) or await uow.realms.add(
            platform, realm_key
        )
        session = await uow.sessions.add(
            realm_id=realm.id, platform=platform, key=key, settings=settings or SessionSettings()
        )
        main = await uow.branches.add(
            session_id=session.id,
            name=MAIN_BRANCH,
            parent_id=None,
            fork_floor=None,
            fork_page=None,
        )
        return OpenedSession(realm=realm, session=session, main=main, created=True)

    async def find_session(self, platform: str, key: str) -> Session | None:
        """The session ``(platform, key)``, if it exists."""
        async with self._storage.read() as uow:
            return await uow.sessions.find(platform, key)

    async def update_settings(self, session_id: int, settings: SessionSettings) -> Session:
        """Replace a session's settings (character, preset, world books, modes...)."""
        async with self._storage.unit_of_work() as uow:
            await uow.sessions.get(session_id)
            await uow.sessions.update_settings(session_id, settings)
            return await uow.sessions.get(session_id)

    async def change_settings(self, session_id: int, changes: Mapping[str, Any]) -> Session:
        """Change some keys of a session's settings, keeping the others, as one atomic step:
        the row is read locked (:meth:`SessionRepository.get_for_update`), so two processes
        changing different keys at once both keep their change."""
        async with self._storage.unit_of_work() as uow:
            session = await uow.sessions.get_for_update(session_id)
            data = session.settings.to_json()
            data.update(changes)
            await uow.sessions.update_settings(session_id, SessionSettings.from_json(data))
            return await uow.sessions.get(session_id)

    async def branches(self, session_id: int) -> list[Branch]:
        """Every branch of a session, oldest first."""
        async with self._storage.read() as uow:
            return await uow.branches.list(session_id)

    async def branch(self, session_id: int, name: str) -> Branch:
        """The branch ``name`` of a session; TimelineNotFoundError when missing."""
        async with self._storage.read() as uow:
            found = await uow.branches.find(session_id, name)
        if found is None:
            raise TimelineNotFoundError(f"this session has no branch named {name!r}")
        return found

    async def head(self, branch_id: int) -> int:
        """The number of the branch's newest committed floor (0 when it has none)."""
        async with self._storage.read() as uow:
            branch = await uow.branches.get(branch_id)
            return await store.head_of(uow, await store.lineage_of(uow, branch))

    async def fork(self, branch_id: int, *, name: str, after_floor: int | None = None) -> Branch:
        """Create branch ``name`` that sees ``branch_id`` up to and including floor
        ``after_floor`` (None: its newest committed floor; 0: before any floor)."""
        check_name(name, what="branch")
        async with self._storage.unit_of_work() as uow:
            source = await uow.branches.get(branch_id)
            await uow.branches.lock(source.id)
            lineage = await store.lineage_of(uow, source)
            head = await store.head_of(uow, lineage)
            at = head if after_floor is None else after_floor
            if not 0 <= at <= head:
                raise TimelineNotFoundError(
                    f"branch {source.name!r} has no committed floor {at} to fork after "
                    f"(its floors are 1..{head})"
                )
            if await uow.branches.find(source.session_id, name) is not None:
                raise DuplicateNameError(f"branch {name!r} already exists in this session")
            page_number: int | None = None
            if at > 0:
                # None when floor ``at`` failed: the fork sees its input and no reply.
                pinned = await store.lineage_pages(uow, lineage, at, at)
                page_number = pinned[0][1].number if pinned else None
            created = await uow.branches.add(
                session_id=source.session_id,
                name=name,
                parent_id=lineage.owner_of(at),
                fork_floor=at,
                fork_page=page_number,
            )
            state = await store.branch_state(uow, lineage, at, last=None, active_last=True)
            await uow.variables.replace("branch", created.id, state)
        self._emit("branch.created", branch=created.name, parent=source.name, after_floor=at)
        return created

    # ------------------------------------------------------------------ floors

    async def open_floor(
        self,
        branch_id: int,
        inputs: Sequence[NewMessage] = (),
        *,
        speaker: str | None = None,
    ) -> Floor:
        """A new ``draft`` floor after the branch's newest floor (a failed one keeps its
        number), holding the user's input messages and replied by ``speaker`` (a group
        member; None: the session's character); the checks are :func:`open_generating`'s.
        BranchBusyError while another floor or page of the branch is in progress."""
        async with self._storage.unit_of_work() as uow:
            branch = await uow.branches.get(branch_id)
            branches = await uow.branches.list(branch.session_id)
            seq, found = await next_floor(uow, branch, branches, inputs)
            floor = await uow.floors.add(
                branch_id=branch.id, seq=seq, owner=self.owner, speaker=speaker
            )
            await uow.messages.add(floor_id=floor.id, page_id=None, messages=inputs)
            await settle_new_floor(uow, branch, floor, inputs, found)
        self._emit("floor.created", branch_id=branch_id, floor=floor.seq)
        return floor

    async def start_generating(self, floor_id: int) -> Floor:
        """Move a draft floor to ``generating`` (compare-and-set)."""
        return await self._move_floor(floor_id, "generating")

    async def fail_floor(self, floor_id: int, error: str) -> Floor:
        """Mark a draft or generating floor failed, with its pending pages; nothing it staged
        is kept."""
        async with self._storage.unit_of_work() as uow:
            floor = await uow.floors.get(floor_id)
            check_floor_transition(floor.state, "failed", where=f"floor {floor.seq}")
            if not await uow.floors.compare_and_set(
                floor.id, expected=floor.state, state="failed", error=error
            ):
                raise StaleStateError(f"floor {floor.seq} changed while it was being failed")
            for page in await uow.pages.of_floors([floor.id]):
                if page.status == "pending":
                    await uow.pages.compare_and_set(
                        page.id, expected="pending", status="failed", error=error
                    )
            failed = await uow.floors.get(floor.id)
        self._emit("floor.failed", floor_id=floor.id, floor=floor.seq, error=error)
        return failed

    async def _move_floor(self, floor_id: int, target: FloorState) -> Floor:
        async with self._storage.unit_of_work() as uow:
            floor = await uow.floors.get(floor_id)
            check_floor_transition(floor.state, target, where=f"floor {floor.seq}")
            if not await uow.floors.compare_and_set(floor.id, expected=floor.state, state=target):
                raise StaleStateError(f"floor {floor.seq} left {floor.state} before {target}")
            moved = await uow.floors.get(floor.id)
        self._emit("floor.stateChanged", floor_id=floor_id, state=target)
        return moved

    # ------------------------------------------------------------------ pages

    async def add_page(self, floor_id: int, *, meta: Mapping[str, Any] | None = None) -> Page:
        """A new pending page on the branch's latest floor: the first reply of a new floor, a
        regenerate of a committed one, or a retry of a failed one (the floor is generating
        again, see :data:`~engine.timeline.states.RETRY`); or a regenerate of an earlier
        reply of the latest group turn (:mod:`engine.timeline.earlier`). BranchBusyError
        while another page is pending."""
        async with self._storage.unit_of_work() as uow:
            floor = await uow.floors.get(floor_id)
            await uow.branches.lock(floor.branch_id)
            newest = await uow.floors.newest(floor.branch_id)
            if newest is None or newest.id != floor.id:
                refusal = (
                    f"floor {floor.seq} is not its branch's latest floor; only that one "
                    "can be regenerated"
                )
                if newest is None:
                    raise PageTransitionError(refusal)
                # An earlier reply of the latest group turn may take a page (issue 17).
                await check_earlier_floor(uow, floor, newest, refusal=refusal)
            pages = await uow.pages.of_floors([floor.id])
            # A retry: a failed floor generates again with its own input and keeps its number;
            # its failed pages stay for diagnosis.
            if floor.state == "failed" and not await uow.floors.compare_and_set(
                floor.id, expected="failed", state="generating", owner=self.owner
            ):
                raise StaleStateError(f"floor {floor.seq} changed while it was retried")
            if any(p.status == "pending" for p in pages):
                raise BranchBusyError(f"floor {floor.seq} already has a page being generated")
            if len(pages) >= MAX_PAGES_PER_FLOOR:
                raise LimitExceededError(
                    f"floor {floor.seq} has {len(pages)} pages (at most {MAX_PAGES_PER_FLOOR})",
                    limit="MAX_PAGES_PER_FLOOR",
                    value=MAX_PAGES_PER_FLOOR,
                )
            number = max((p.number for p in pages), default=0) + 1
            return await uow.pages.add(
                floor_id=floor.id, number=number, meta=meta or {}, owner=self.owner
            )

    async def commit_page(
        self,
        page_id: int,
        *,
        messages: Sequence[NewMessage] = (),
        writes: Sequence[Mutation] = (),
        meta: Mapping[str, Any] | None = None,
        known: PageContext | None = None,
        itemization: Mapping[str, Any] | None = None,
    ) -> PageContext:
        """Commit a pending page in one transaction: the page is frozen and active, its floor
        committed (a regenerated page's floor already is), its messages stored, its staged
        writes logged and materialised, its chat/global writes applied. All or nothing.
        ``known``: the page's context as its caller left it (a pending page on a generating
        or committed floor), which saves reading it; the compare-and-set updates still
        refuse a page or floor that changed since (StaleStateError)."""
        async with self._storage.unit_of_work() as uow:
            ctx = known if known is not None else await uow.pages.context(page_id)
            page, floor = ctx.page, ctx.floor
            where = f"floor {floor.seq} page {page.number}"
            if page.id != page_id:
                raise PageTransitionError(f"{where}: not the page being committed")
            check_writes(writes, where=where)
            await uow.branches.lock(ctx.branch.id)
            check_page_transition(page.status, "committed", where=where)
            new_floor = floor.state != "committed"
            if new_floor:
                check_floor_transition(floor.state, "committed", where=where)
            if not await uow.pages.compare_and_set(
                page.id, expected="pending", status="committed", meta=meta
            ):
                raise StaleStateError(f"{where}: another commit or failure won")
            if new_floor:
                won = await uow.floors.compare_and_set(
                    floor.id, expected="generating", state="committed", active_page=page.number
                )
            else:
                won = await uow.floors.set_active_page(
                    floor.id, expected=floor.active_page, page=page.number
                )
            if not won:
                raise StaleStateError(f"{where}: the floor changed while committing")
            await uow.messages.add(floor_id=floor.id, page_id=page.id, messages=messages)
            if itemization is not None:  # how its prompt was assembled: one INSERT
                await uow.itemizations.add(page.id, itemization)
            await store.commit_writes(
                uow,
                branch=ctx.branch,
                realm_id=ctx.realm_id,
                floor=floor,
                page=page,
                writes=writes,
                new_floor=new_floor,
            )
            committed = PageContext(
                page=replace(page, status="committed", meta=dict(meta or page.meta)),
                floor=replace(floor, state="committed", active_page=page.number),
                branch=ctx.branch,
                realm_id=ctx.realm_id,
            )
        self._emit("floor.committed", floor_id=floor.id, floor=floor.seq, page=page.number)
        return committed

    async def fail_page(self, page_id: int, error: str) -> PageContext:
        """Mark a pending page failed. A floor that was not committed fails with it; a
        committed floor (a failed regenerate) keeps its active page. Staged writes vanish."""
        async with self._storage.unit_of_work() as uow:
            ctx = await uow.pages.context(page_id)
            page, floor = ctx.page, ctx.floor
            where = f"floor {floor.seq} page {page.number}"
            check_page_transition(page.status, "failed", where=where)
            if not await uow.pages.compare_and_set(
                page.id, expected="pending", status="failed", error=error
            ):
                raise StaleStateError(f"{where}: another commit or failure won")
            if floor.state in ("draft", "generating"):
                if not await uow.floors.compare_and_set(
                    floor.id, expected=floor.state, state="failed", error=error
                ):
                    raise StaleStateError(f"{where}: the floor changed while failing")
                floor = replace(floor, state="failed", error=error)
            failed = PageContext(
                page=replace(page, status="failed", error=error),
                floor=floor,
                branch=ctx.branch,
                realm_id=ctx.realm_id,
            )
        self._emit("floor.failed", floor_id=floor.id, floor=floor.seq, error=error)
        return failed

    async def activate_page(self, floor_id: int, number: int) -> Floor:
        """Swipe: make committed page ``number`` the active page of the branch's latest
        floor (or of an earlier reply of the latest group turn, see
        :mod:`engine.timeline.earlier`); the floor scope and the branch state follow it."""
        async with self._storage.unit_of_work() as uow:
            floor = await uow.floors.get(floor_id)
            branch = await uow.branches.get(floor.branch_id)
            await uow.branches.lock(branch.id)
            where = f"floor {floor.seq}"
            if floor.state != "committed":
                raise PageTransitionError(f"{where} is {floor.state}; only committed floors swipe")
            latest = await uow.floors.latest(branch.id)
            if latest is None or latest.id != floor.id:
                # An earlier reply of the latest group turn may swipe (issue 17).
                refusal = f"{where} is not its branch's latest floor"
                newest = await uow.floors.newest(branch.id)
                if newest is None:
                    raise PageTransitionError(refusal)
                await check_earlier_floor(uow, floor, newest, refusal=refusal)
            pages = {p.number: p for p in await uow.pages.of_floors([floor.id])}
            target = pages.get(number)
            if target is None:
                raise TimelineNotFoundError(f"{where} has no page {number}")
            if target.status != "committed":
                raise PageTransitionError(f"{where} page {number} is {target.status}")
            if floor.active_page == number:
                return floor
            if not await uow.floors.set_active_page(
                floor.id, expected=floor.active_page, page=number
            ):
                raise StaleStateError(f"{where}: the active page changed meanwhile")
            lineage = await store.lineage_of(uow, branch)
            await store.rebuild_head(uow, lineage, floor, target, save_snapshot=False)
            swiped = replace(floor, active_page=number)
        self._emit("page.activated", floor_id=floor.id, floor=floor.seq, page=number)
        return swiped

    # ------------------------------------------------------------------ start-up

    async def recover(
        self,
        leases: LeaseKeeper | None = None,
        *,
        session_id: int | None = None,
        claims: Claims | None = None,
    ) -> list[Floor]:
        """Fail what a stopped process left in progress: floors left ``draft`` or
        ``generating`` and pages left ``pending`` (a committed floor keeps its active page).
        ``leases``: fail only the work of dead owners (see :mod:`engine.timeline.leases`), so
        a turn another live process is generating is left alone; None: everything.
        ``session_id``: only that session's floors. ``claims(platform, realm)``: only floors
        of the sessions this process can tell (None: all), so the process that fails a floor
        is one that can say so in its chat. Returns the failed floors."""
        # Read first (the heartbeat sweeps often, and there is rarely anything to fail), so
        # the write lock is only taken when something is to change; the compare-and-set
        # updates then refuse whatever moved in between.
        async with self._storage.read() as uow:
            mine: set[int] | None = None
            if session_id is not None:
                mine = {b.id for b in await uow.branches.list(session_id)}
            floors = [
                floor
                for state in ("draft", "generating")
                for floor in await uow.floors.in_state(state)
                if mine is None or floor.branch_id in mine
            ]
            pages = await uow.pages.in_status("pending")
            if mine is not None:
                pages = [p for p in pages if (await uow.pages.context(p.id)).branch.id in mine]
            owners = [f.owner for f in floors] + [p.owner for p in pages]
            dead = None if leases is None else await leases.dead_owners(uow, owners)
            floors = [f for f in floors if dead is None or f.owner in dead]
            places: dict[int, dict[str, str]] = {}
            if claims is not None:
                places = {f.id: await _place_of(uow, f.branch_id) for f in floors}
        # A floor left to another process keeps its pages pending with it.
        others = {
            f.id
            for f in floors
            if claims is not None and not claims(places[f.id]["platform"], places[f.id]["realm"])
        }
        floors = [f for f in floors if f.id not in others]
        doomed = {f.id for f in floors}
        pages = [
            p
            for p in pages
            if p.floor_id not in others
            and (dead is None or p.owner in dead or p.floor_id in doomed)
        ]
        failed: list[Floor] = []
        if not floors and not pages:
            return failed
        async with self._storage.unit_of_work() as uow:
            for floor in floors:
                error = INTERRUPTED if floor.state == "generating" else INTERRUPTED_DRAFT
                if await uow.floors.compare_and_set(
                    floor.id, expected=floor.state, state="failed", error=error
                ):
                    failed.append(replace(floor, state="failed", error=error))
                    if floor.id not in places:
                        places[floor.id] = await _place_of(uow, floor.branch_id)
            for page in pages:
                await uow.pages.compare_and_set(
                    page.id, expected="pending", status="failed", error=INTERRUPTED
                )
        # Only the process whose compare-and-set won says so: front ends tell the chat once
        # (``interrupted`` and the place: platform, realm, session key and branch name).
        for floor in failed:
            self._emit(
                "floor.failed",
                floor_id=floor.id,
                floor=floor.seq,
                error=floor.error,
                interrupted=True,
                **places[floor.id],
            )
        return failed


async def _place_of(uow: UnitOfWork, branch_id: int) -> dict[str, str]:
    """Where a floor of ``branch_id`` lives, as an event's payload: platform, realm key,
    session key and branch name."""
    branch = await uow.branches.get(branch_id)
    session = await uow.sessions.get(branch.session_id)
    realm = await uow.realms.get(session.realm_id)
    return {
        "platform": session.platform,
        "realm": realm.key,
        "session": session.key,
        "branch": branch.name,
    }
