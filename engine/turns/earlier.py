"""Finding the floor a regenerate or swipe names when it is not the branch's latest: an
earlier member's reply of the latest group turn (issue 17). The timeline decides whether that
floor may change (:mod:`engine.timeline.earlier`); this only finds it and refuses what is
plainly not a reply of this branch."""

from __future__ import annotations

from engine.timeline.history import HistoryService
from engine.timeline.values import Branch, Floor
from engine.turns.errors import NothingToDoError

__all__ = ["own_floor"]


async def own_floor(history: HistoryService, branch: Branch, seq: int, what: str) -> Floor:
    """Committed floor ``seq`` of ``branch`` itself, to ``what`` (``regenerate``, ``swipe``);
    NotFoundError when the branch has no such floor, NothingToDoError when it comes from the
    branch this one forked from or is hidden."""
    found = (await history.floor_view(branch.id, seq)).floor
    if found.branch_id != branch.id:
        raise NothingToDoError(
            f"floor {seq} comes from the branch {branch.name!r} forked from; only its own "
            f"replies can {what} here"
        )
    if found.hidden:
        raise NothingToDoError(
            f"floor {seq} of branch {branch.name!r} is hidden; nothing to {what}"
        )
    return found
