"""When a floor that is not its branch's latest may still take a new page or a swipe.

A group turn puts each member's reply on its own floor, so a user reacting on Mira's reply
(floor k) while Bob's reply (floor k+1) is the latest asks to change a floor in the middle of
the branch. That is allowed only when nothing after floor k depends on which page it shows in
a way the engine cannot recompute:

- every floor after k on the branch is a committed reply of the same turn (no input lines,
  a speaker, no activation seed, no page pending): a later user message would have been
  answered with k's old reply in its prompt;
- no branch forks at or after floor k (a fork after k reads floor k through this branch's
  active page, so its history would silently change);
- no floor after k stores branch snapshots (:data:`~engine.variables.store.SNAPSHOT_EVERY`:
  they were built with k's old page and are never rewritten).

The branch head is then refolded from floor k through the latest floor
(:func:`engine.variables.store.rebuild_head`), so the later replies' writes stay on top.
"""

from __future__ import annotations

from engine.ports import UnitOfWork
from engine.timeline.errors import PageTransitionError
from engine.timeline.values import Floor
from engine.variables.store import SNAPSHOT_EVERY

__all__ = ["check_earlier_floor"]


async def check_earlier_floor(
    uow: UnitOfWork, floor: Floor, newest: Floor, *, refusal: str
) -> None:
    """Inside ``uow`` (the branch locked): refuse a new page or a swipe on ``floor`` when the
    branch's ``newest`` floor is a later one and the rules of the module docstring do not
    hold. ``refusal``: the message of a floor that is simply not the latest (a later input,
    a failed or generating floor after it, a solo floor); the fork and snapshot refusals
    say what blocks them."""
    where = f"floor {floor.seq}"
    if floor.state != "committed" or floor.speaker is None or newest.seq <= floor.seq:
        raise PageTransitionError(refusal)
    later = await uow.floors.committed(floor.branch_id, floor.seq + 1, newest.seq)
    if (
        newest.state != "committed"
        or len(later) != newest.seq - floor.seq
        or await uow.floors.failed(floor.branch_id, floor.seq + 1, newest.seq)
        or any(f.speaker is None or f.seed is not None for f in later)
    ):
        raise PageTransitionError(refusal)
    ids = [f.id for f in later]
    if any(m.page_id is None for m in await uow.messages.of_floors(ids)):
        raise PageTransitionError(refusal)  # a later floor holds a user's lines
    if any(p.status == "pending" for p in await uow.pages.of_floors(ids)):
        raise PageTransitionError(f"{where}: a later reply is being generated; try again")
    branch = await uow.branches.get(floor.branch_id)
    forks = sorted(
        b.name
        for b in await uow.branches.list(branch.session_id)
        if b.parent_id == branch.id and b.fork_floor is not None and b.fork_floor >= floor.seq
    )
    if forks:
        raise PageTransitionError(
            f"{where} of branch {branch.name!r} cannot change: branch {forks[0]!r} forks at "
            "or after it and would see its history change"
        )
    saved = [f.seq for f in later if f.seq % SNAPSHOT_EVERY == 0]
    if saved:
        raise PageTransitionError(
            f"{where} of branch {branch.name!r} cannot change: floor {saved[0]} after it "
            f"keeps a saved state (every {SNAPSHOT_EVERY}th floor); only floor {newest.seq} "
            "can be regenerated or swiped"
        )
