"""Variable state over a unit of work: materialised heads, snapshots and bounded folds.

How state is kept (reads never replay history):

- **The log** (``variable_log``) holds every persisted mutation in order. A page's writes are
  positioned at its floor; an explicit write to a branch or floor scope is positioned "before
  floor s" of the branch that made it, where ``s`` is that branch's next floor. A branch sees
  the entries its lineage holds (see :mod:`engine.timeline.lineage`).
- **Branch scope**, by definition: for each floor ``s`` of the lineage in order, apply the
  explicit entries before ``s``, then the log of the active page of ``s``.
- **Materialised values** (``variable_value``) hold the current value of every key per scope
  owner: the head of each branch, each floor's floor scope (follows its active page), each
  page's page scope, each session's chat scope and each realm's global scope. Reading the
  current state is one query per scope, whatever the history length.
- **Snapshots**: the branch scope after a page is a pure function of that page (floors before
  the latest are frozen, and forks pin the page they saw; an earlier reply of the latest group
  turn may still change, but never with a snapshot floor after it, see
  :mod:`engine.timeline.earlier`), so every page on a floor whose number
  is a multiple of :data:`SNAPSHOT_EVERY` stores the full branch scope after it. The state at
  any floor ``n`` is then the nearest snapshot at or before ``n`` plus fewer than
  ``SNAPSHOT_EVERY`` floors of logs.
- **Commit** of a new floor applies the page's branch delta to the materialised head
  incrementally. A regenerated page that becomes active, or a swipe, recomputes the head as
  "state before the floor + the page's log + explicit writes made since" (a bounded fold).
- Chat and global writes are applied once, when their page commits (they are shared by every
  branch, so swiping never rewrites them).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any, Final

from engine.ports import UnitOfWork
from engine.timeline.lineage import Lineage, build_lineage
from engine.timeline.values import Branch, Floor, Page
from engine.variables.fold import apply_delta, delta_of, fold
from engine.variables.values import LogEntry, Mutation, NewLogEntry, Scope

SNAPSHOT_EVERY: Final = 32
"""Every page of a floor whose number is a multiple of this stores a full branch snapshot."""


async def lineage_of(uow: UnitOfWork, branch: Branch) -> Lineage:
    """The lineage of ``branch`` (reads every branch of its session)."""
    return build_lineage(branch, await uow.branches.list(branch.session_id))


async def head_of(uow: UnitOfWork, lineage: Lineage) -> int:
    """The number of the newest committed floor the branch sees (0: none). Failed floors
    keep their numbers, so committed floors may have gaps."""
    newest = await uow.floors.newest_committed(lineage.branch.id)
    return lineage.base if newest is None else newest


async def next_seq(uow: UnitOfWork, lineage: Lineage) -> int:
    """The number the branch's next floor takes: after every floor it has, failed ones
    included (a failed floor keeps its number and stays in the chat)."""
    newest = await uow.floors.newest(lineage.branch.id)
    return (lineage.base if newest is None else max(newest.seq, lineage.base)) + 1


async def last_seen(uow: UnitOfWork, lineage: Lineage) -> int:
    """The number of the newest floor the branch sees that is settled (committed or
    failed); a floor still in progress is not yet part of what it shows."""
    newest = await uow.floors.newest(lineage.branch.id)
    if newest is None:
        return lineage.base
    return newest.seq if newest.state in ("committed", "failed") else newest.seq - 1


async def lineage_floors(
    uow: UnitOfWork, lineage: Lineage, first: int, last: int
) -> list[tuple[Floor, Page | None]]:
    """The settled floors ``first..last`` the branch sees, by number: committed ones with
    the page the branch sees active, failed ones (no reply, but their input) with None."""
    found: list[tuple[Floor, Page | None]] = list(await lineage_pages(uow, lineage, first, last))
    for segment in lineage.segments:
        low = max(first, segment.first)
        high = last if segment.last is None else min(last, segment.last)
        if low <= high:
            found.extend((f, None) for f in await uow.floors.failed(segment.branch_id, low, high))
    found.sort(key=lambda pair: (pair[0].seq, pair[0].id))
    return found


async def lineage_pages(
    uow: UnitOfWork, lineage: Lineage, first: int, last: int
) -> list[tuple[Floor, Page]]:
    """The committed floors ``first..last`` the branch sees, each with the page it sees
    active (a fork sees the page it pinned), by floor number."""
    floors: list[Floor] = []
    for segment in lineage.segments:
        low = max(first, segment.first)
        high = last if segment.last is None else min(last, segment.last)
        if low <= high:
            floors.extend(await uow.floors.committed(segment.branch_id, low, high))
    pages = await uow.pages.of_floors([f.id for f in floors])
    by_number = {(p.floor_id, p.number): p for p in pages}
    result: list[tuple[Floor, Page]] = []
    for floor in floors:
        number = lineage.pinned(floor.branch_id, floor.seq) or floor.active_page
        page = by_number.get((floor.id, number or 0))
        if page is not None:
            result.append((floor, page))
    return result


async def _explicit(
    uow: UnitOfWork, lineage: Lineage, first: int, last: int, scope: Scope
) -> dict[int, list[LogEntry]]:
    by_seq: dict[int, list[LogEntry]] = defaultdict(list)
    for segment in lineage.segments:
        low = max(first, segment.first)
        high = last if segment.last is None else min(last, segment.last)
        if low > high:
            continue
        for entry in await uow.variables.explicit(segment.branch_id, low, high, scope):
            if entry.seq is not None:
                by_seq[entry.seq].append(entry)
    return by_seq


async def branch_state(
    uow: UnitOfWork, lineage: Lineage, n: int, *, last: Page | None, active_last: bool = False
) -> dict[str, Any]:
    """The branch scope at floor ``n``: after the explicit writes before ``n`` and then the log
    of ``last`` (``active_last``: the page the lineage sees active at ``n``; neither: the
    state a new page of floor ``n`` starts from)."""
    if n <= 0:
        return {}
    start = ((n - 1) // SNAPSHOT_EVERY) * SNAPSHOT_EVERY
    pairs = await lineage_pages(uow, lineage, max(start, 1), n)
    page_at = {floor.seq: page for floor, page in pairs}
    state: dict[str, Any] = {}
    if start > 0:
        anchor = page_at.get(start)
        saved = None if anchor is None else await uow.variables.snapshot(anchor.id)
        if saved is None:  # not expected; fall back to a longer fold rather than fail
            saved = await branch_state(uow, lineage, start, last=None, active_last=True)
        state = saved
    final = page_at.get(n) if active_last else last
    replay = [page_at[s].id for s in range(start + 1, n) if s in page_at]
    if final is not None:
        replay.append(final.id)
    logs = await uow.variables.page_log(replay, "branch")
    explicit = await _explicit(uow, lineage, start + 1, n, "branch")
    for seq in range(start + 1, n + 1):
        apply_delta(state, delta_of((e.mutation for e in explicit.get(seq, ())), "branch"))
        page = page_at.get(seq) if seq < n else final
        if page is not None:
            apply_delta(state, delta_of(logs.get(page.id, ()), "branch"))
    return state


async def floor_scope(uow: UnitOfWork, floor: Floor, page: Page | None) -> dict[str, Any]:
    """A floor's floor scope as ``page`` (None: no page yet) leaves it, from the log: the
    explicit writes made for the whole floor (before or while it generated), then the page's
    own writes, then the explicit writes made on that page after it committed (a player's
    ``/setvar NAME VALUE floor``; those of another page are not this page's)."""
    explicit = await uow.variables.explicit(floor.branch_id, floor.seq, floor.seq, "floor")
    state = fold((e.mutation for e in explicit if e.page_id is None), "floor")
    if page is not None:
        logs = await uow.variables.page_log([page.id], "floor")
        state = fold(logs.get(page.id, ()), "floor", state)
        state = fold((e.mutation for e in explicit if e.page_id == page.id), "floor", state)
    return state


def page_entries(
    writes: Sequence[Mutation], *, realm_id: int, session_id: int, floor: Floor, page: Page
) -> list[NewLogEntry]:
    """Log entries for a page's staged writes, positioned at its floor."""
    return [
        NewLogEntry(
            mutation=w,
            source="page",
            session_id=session_id,
            realm_id=realm_id,
            branch_id=floor.branch_id,
            seq=floor.seq,
            floor_id=floor.id,
            page_id=page.id,
        )
        for w in writes
    ]


async def commit_writes(
    uow: UnitOfWork,
    *,
    branch: Branch,
    realm_id: int,
    floor: Floor,
    page: Page,
    writes: Sequence[Mutation],
    new_floor: bool,
) -> None:
    """Persist a committing page's staged writes and materialise what they change.

    ``new_floor``: the page is the first to commit on its floor (the branch's next floor);
    otherwise it is a regenerated page that becomes the active one.
    """
    await uow.variables.append(
        page_entries(
            writes, realm_id=realm_id, session_id=branch.session_id, floor=floor, page=page
        )
    )
    await uow.variables.change("page", page.id, delta_of(writes, "page"))
    if new_floor:
        await uow.variables.change("floor", floor.id, delta_of(writes, "floor"))
        await uow.variables.change("branch", branch.id, delta_of(writes, "branch"))
        if floor.seq % SNAPSHOT_EVERY == 0:
            snapshot = await uow.variables.values("branch", branch.id)
            await uow.variables.save_snapshot(page.id, snapshot)
    else:
        lineage = await lineage_of(uow, branch)
        await rebuild_head(uow, lineage, floor, page, save_snapshot=True)
    await uow.variables.change("chat", branch.session_id, delta_of(writes, "chat"))
    await uow.variables.change("global", realm_id, delta_of(writes, "global"))


async def rebuild_head(
    uow: UnitOfWork, lineage: Lineage, floor: Floor, page: Page, *, save_snapshot: bool
) -> None:
    """Make ``page`` the one ``floor``'s state follows: recompute the floor scope and the
    branch head (state before the floor + the page, then for each later floor of the branch
    the explicit writes before it and its active page's log, then the explicit writes made
    since). ``floor`` is the head floor, or an earlier reply of the latest group turn whose
    later floors hold no snapshot (:mod:`engine.timeline.earlier`)."""
    branch = lineage.branch
    before = await branch_state(uow, lineage, floor.seq, last=None)
    logs = await uow.variables.page_log([page.id], "branch")
    after = apply_delta(before, delta_of(logs.get(page.id, ()), "branch"))
    if save_snapshot and floor.seq % SNAPSHOT_EVERY == 0:
        await uow.variables.save_snapshot(page.id, after)
    head = dict(after)
    newest = await head_of(uow, lineage)
    later = await lineage_pages(uow, lineage, floor.seq + 1, newest) if newest > floor.seq else []
    page_at = {f.seq: p for f, p in later}
    later_logs = await uow.variables.page_log([p.id for p in page_at.values()], "branch")
    explicit = await _explicit(uow, lineage, floor.seq + 1, newest, "branch")
    for seq in range(floor.seq + 1, newest + 1):
        # Later replies of the turn keep their writes on top of the floor's new page.
        apply_delta(head, delta_of((e.mutation for e in explicit.get(seq, ())), "branch"))
        if seq in page_at:
            apply_delta(head, delta_of(later_logs.get(page_at[seq].id, ()), "branch"))
    since = await uow.variables.explicit(branch.id, max(newest, floor.seq) + 1, None, "branch")
    head = apply_delta(head, delta_of((e.mutation for e in since), "branch"))
    await uow.variables.replace("branch", branch.id, head)
    await uow.variables.replace("floor", floor.id, await floor_scope(uow, floor, page))
