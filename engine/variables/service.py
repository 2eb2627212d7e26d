"""The variable service: read the five scopes anywhere on a branch, write any scope
explicitly, list a variable's history. Staged writes of a generating page are the turn
workflow's (kept in memory, handed to ``TimelineService.commit_page``); see
:mod:`engine.variables.store` for how state is kept.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine.errors import LimitExceededError
from engine.ports import Storage, UnitOfWork
from engine.timeline.errors import PageTransitionError, TimelineNotFoundError
from engine.timeline.values import Branch, Floor
from engine.variables import store
from engine.variables.fold import delta_of
from engine.variables.values import (
    MAX_KEY_LENGTH,
    HistoryEntry,
    Mutation,
    NewLogEntry,
    Scope,
    VariableState,
    check_scope,
    check_storable,
)


class VariableService:
    """Variables of branches, sessions (chat scope) and realms (global scope)."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    async def state(self, branch_id: int, *, floor: int | None = None) -> VariableState:
        """The five scopes as the branch sees them now (``floor`` None), or as they were right
        after floor ``floor`` committed (the branch scope as of then; ``page``/``floor`` are
        that floor's active page and floor; chat and global are always current)."""
        async with self._storage.read() as uow:
            branch = await uow.branches.get(branch_id)
            lineage = await store.lineage_of(uow, branch)
            head = await store.head_of(uow, lineage)
            if floor is not None and not 0 <= floor <= head:
                raise TimelineNotFoundError(
                    f"branch {branch.name!r} has no committed floor {floor} (its floors are "
                    f"1..{head})"
                )
            at = head if floor is None else floor
            session = await uow.sessions.get(branch.session_id)
            # Every materialised scope in one read; the rest only when history is asked for.
            owners: list[tuple[Scope, int]] = [
                ("branch", branch.id),
                ("chat", session.id),
                ("global", session.realm_id),
            ]
            seen = await store.lineage_pages(uow, lineage, at, at) if at >= 1 else []
            for seen_floor, page in seen:
                owners += [("page", page.id), ("floor", seen_floor.id)]
            found = await uow.variables.values_of(owners)
            branch_values = found[("branch", branch.id)]
            if floor is not None:
                branch_values = await store.branch_state(
                    uow, lineage, at, last=None, active_last=True
                )
            page_values: dict[str, Any] = {}
            floor_values: dict[str, Any] = {}
            for seen_floor, page in seen:
                page_values = found[("page", page.id)]
                floor_values = found[("floor", seen_floor.id)]
                if page.number != seen_floor.active_page:
                    # a fork pinned a page its parent has swiped away from since
                    floor_values = await store.floor_scope(uow, seen_floor, page)
            return VariableState(
                page=page_values,
                floor=floor_values,
                branch=branch_values,
                chat=found[("chat", session.id)],
                global_=found[("global", session.realm_id)],
            )

    async def page_state(self, branch_id: int, *, floor: int, page: int) -> VariableState:
        """The five scopes as page ``page`` of committed floor ``floor`` left them, whether or
        not it is the active page: the branch scope as if that page were the one kept, its
        floor and page scopes; chat and global are always current (the web page shows a
        swiped-away page's values beside the active one's)."""
        async with self._storage.read() as uow:
            branch = await uow.branches.get(branch_id)
            lineage = await store.lineage_of(uow, branch)
            seen = await store.lineage_pages(uow, lineage, floor, floor)
            if not seen:
                raise TimelineNotFoundError(
                    f"branch {branch.name!r} has no committed floor {floor}"
                )
            at, _ = seen[0]
            chosen = next(
                (
                    p
                    for p in await uow.pages.of_floors([at.id])
                    if p.number == page and p.status == "committed"
                ),
                None,
            )
            if chosen is None:
                raise TimelineNotFoundError(f"floor {floor} has no committed page {page}")
            session = await uow.sessions.get(branch.session_id)
            return VariableState(
                page=await uow.variables.values("page", chosen.id),
                floor=await store.floor_scope(uow, at, chosen),
                branch=await store.branch_state(uow, lineage, floor, last=chosen),
                chat=await uow.variables.values("chat", session.id),
                global_=await uow.variables.values("global", session.realm_id),
            )

    async def base_for(self, floor_id: int) -> VariableState:
        """The state a new page of this floor starts from: the branch scope before the floor,
        its explicit floor-scope values, an empty page scope, and current chat and global."""
        async with self._storage.read() as uow:
            floor = await uow.floors.get(floor_id)
            branch = await uow.branches.get(floor.branch_id)
            session = await uow.sessions.get(branch.session_id)
            if floor.state == "committed":  # a regenerate: the floor's active page is ignored
                lineage = await store.lineage_of(uow, branch)
                branch_values = await store.branch_state(uow, lineage, floor.seq, last=None)
                floor_values = await store.floor_scope(uow, floor, None)
            else:
                branch_values = await uow.variables.values("branch", branch.id)
                floor_values = await uow.variables.values("floor", floor.id)
            return VariableState(
                floor=floor_values,
                branch=branch_values,
                chat=await uow.variables.values("chat", session.id),
                global_=await uow.variables.values("global", session.realm_id),
            )

    async def set(
        self,
        branch_id: int,
        scope: Scope,
        key: str,
        value: Any,
        *,
        page_id: int | None = None,
        current: bool = False,
    ) -> None:
        """An explicit write (``/vars set --scope``, tools). ``branch`` and ``floor`` writes
        land before the branch's next floor (the open floor, if one is in progress); ``page``
        writes need the id of a pending page of this branch. ``current`` (a player's write):
        with no floor in progress, ``floor`` and ``page`` writes land at once on the newest
        committed floor the branch sees and its active page (:meth:`write`)."""
        mutation = Mutation.set(scope, key, value)
        await self.write(branch_id, mutation, page_id=page_id, current=current)

    async def delete(
        self,
        branch_id: int,
        scope: Scope,
        key: str,
        *,
        page_id: int | None = None,
        current: bool = False,
    ) -> None:
        """An explicit delete; placed like :meth:`set`."""
        mutation = Mutation.delete(scope, key)
        await self.write(branch_id, mutation, page_id=page_id, current=current)

    async def write(
        self,
        branch_id: int,
        mutation: Mutation,
        *,
        page_id: int | None = None,
        current: bool = False,
    ) -> None:
        """Apply one explicit mutation now (logged, and materialised).

        ``current``: a ``floor`` or ``page`` write without a floor in progress goes to the
        branch's newest committed floor and the page it sees active, as a player who types
        ``/setvar x 1 floor`` means "this floor, now" (without it, a floor write waits for
        the next floor and a page write needs a pending page). The entry is tied to that
        page, so the floor scope keeps it while the page is active, after the page's own
        writes (:func:`~engine.variables.store.floor_scope`). A branch with no floor yet
        refuses it (:class:`TimelineNotFoundError`)."""
        check_scope(mutation.scope)
        if mutation.op == "set":
            check_storable(mutation.key, mutation.value)
        if not mutation.key or len(mutation.key) > MAX_KEY_LENGTH:
            raise LimitExceededError(
                f"variable name {mutation.key[:40]!r} must be 1..{MAX_KEY_LENGTH} long",
                limit="MAX_KEY_LENGTH",
                value=MAX_KEY_LENGTH,
            )
        async with self._storage.unit_of_work() as uow:
            await self._write(uow, branch_id, mutation, page_id, current=current)

    async def _write(
        self,
        uow: UnitOfWork,
        branch_id: int,
        mutation: Mutation,
        page_id: int | None,
        *,
        current: bool,
    ) -> None:
        branch = await uow.branches.get(branch_id)
        await uow.branches.lock(branch.id)
        session = await uow.sessions.get(branch.session_id)
        delta = delta_of([mutation], mutation.scope)
        entry = NewLogEntry(
            mutation=mutation,
            source="explicit",
            session_id=session.id,
            realm_id=session.realm_id,
            branch_id=branch.id,
        )
        scope = mutation.scope
        if scope in ("global", "chat"):
            owner = session.realm_id if scope == "global" else session.id
            await uow.variables.append([entry])
            await uow.variables.change(scope, owner, delta)
            return
        if current and page_id is None and scope in ("floor", "page"):
            latest = await uow.floors.latest(branch.id)
            if latest is None or latest.state in ("committed", "failed"):
                await _write_at_head(uow, branch, entry)
                return
        if scope == "page":
            if page_id is None:
                raise PageTransitionError("a page-scope write needs the pending page it is for")
            ctx = await uow.pages.context(page_id)
            if ctx.branch.id != branch.id or ctx.page.status != "pending":
                raise PageTransitionError(
                    f"page {ctx.page.number} of floor {ctx.floor.seq} is {ctx.page.status} "
                    f"on another branch or frozen; page variables change only while it generates"
                )
            await uow.variables.append(
                [_at(entry, seq=ctx.floor.seq, floor_id=ctx.floor.id, page_id=page_id)]
            )
            await uow.variables.change("page", page_id, delta)
            return
        lineage = await store.lineage_of(uow, branch)
        # Positioned on the floor in progress, else before the next floor (which comes after
        # a failed floor: failed floors keep their numbers).
        open_floor: Floor | None = await uow.floors.latest(branch.id)
        if open_floor is not None and open_floor.state == "committed":
            open_floor = None
        seq = open_floor.seq if open_floor is not None else await store.next_seq(uow, lineage)
        await uow.variables.append([_at(entry, seq=seq, floor_id=None, page_id=None)])
        if scope == "branch":
            await uow.variables.change("branch", branch.id, delta)
        elif open_floor is not None:
            await uow.variables.change("floor", open_floor.id, delta)

    async def history(self, branch_id: int, key: str) -> list[HistoryEntry]:
        """Every write of ``key`` the branch sees, oldest first: the active pages' writes
        along its lineage, explicit writes it sees, the session's chat writes and the realm's
        global writes."""
        async with self._storage.read() as uow:
            branch = await uow.branches.get(branch_id)
            session = await uow.sessions.get(branch.session_id)
            lineage = await store.lineage_of(uow, branch)
            head = await store.head_of(uow, lineage)
            entries = await uow.variables.history(
                key, session_id=session.id, realm_id=session.realm_id
            )
            floors = {
                fid: await uow.floors.get(fid)
                for fid in {e.floor_id for e in entries if e.floor_id is not None}
            }
            pages = {p.id: p for p in await uow.pages.of_floors(list(floors))}
            names = {b.id: b.name for b in await uow.branches.list(session.id)}
        result: list[HistoryEntry] = []
        for entry in entries:
            scope = entry.mutation.scope
            page = pages.get(entry.page_id) if entry.page_id is not None else None
            floor = floors.get(entry.floor_id) if entry.floor_id is not None else None
            if scope not in ("chat", "global"):
                if entry.branch_id is None or entry.seq is None:
                    continue
                if not lineage.sees(entry.branch_id, entry.seq) or entry.seq > head + 1:
                    continue
                if page is not None and floor is not None:
                    active = lineage.pinned(floor.branch_id, floor.seq) or floor.active_page
                    if page.status != "committed" or page.number != active:
                        continue
            result.append(
                HistoryEntry(
                    scope=scope,
                    key=key,
                    value=entry.mutation.value,
                    deleted=entry.mutation.op == "delete",
                    branch=names.get(entry.branch_id) if entry.branch_id is not None else None,
                    floor=entry.seq,
                    page=None if page is None else page.number,
                    source=entry.source,
                    at=entry.created_at,
                )
            )
        return result


async def _write_at_head(uow: UnitOfWork, branch: Branch, entry: NewLogEntry) -> None:
    """Log and materialise a ``floor`` or ``page`` write on the newest committed floor the
    branch sees, tied to the page it sees active (see :meth:`VariableService.write`)."""
    lineage = await store.lineage_of(uow, branch)
    head = await store.head_of(uow, lineage)
    seen = await store.lineage_pages(uow, lineage, head, head) if head >= 1 else []
    if not seen:
        raise TimelineNotFoundError(
            f"branch {branch.name!r} has no floor yet: {entry.mutation.scope} variables "
            "belong to a floor, so play a turn first"
        )
    floor, page = seen[-1]
    # Positioned on the floor's own branch, where every branch that sees the floor looks.
    placed = replace(
        entry, branch_id=floor.branch_id, seq=floor.seq, floor_id=floor.id, page_id=page.id
    )
    await uow.variables.append([placed])
    delta = delta_of([entry.mutation], entry.mutation.scope)
    if entry.mutation.scope == "page":
        await uow.variables.change("page", page.id, delta)
    elif page.number == floor.active_page:  # the materialised floor scope follows it
        await uow.variables.change("floor", floor.id, delta)


def _at(entry: NewLogEntry, *, seq: int, floor_id: int | None, page_id: int | None) -> NewLogEntry:
    return NewLogEntry(
        mutation=entry.mutation,
        source=entry.source,
        session_id=entry.session_id,
        realm_id=entry.realm_id,
        branch_id=entry.branch_id,
        seq=seq,
        floor_id=floor_id,
        page_id=page_id,
    )
