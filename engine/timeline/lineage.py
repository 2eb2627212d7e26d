"""A branch's lineage: which floors of which branches it sees.

A branch forked after floor N of its parent sees the parent's floors up to N (with the page of
floor N that was active when it forked) and its own floors after N. Following parents up to the
root gives one :class:`Segment` per branch, root first. Explicit variable writes are positioned
"before floor s" of the branch that made them, so the same ranges decide which of them a branch
sees: a write the parent made after the fork sits before floor N+1 and is not seen.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.timeline.errors import TimelineNotFoundError
from engine.timeline.values import Branch


@dataclass(frozen=True, slots=True, kw_only=True)
class Segment:
    """Floors ``first..last`` of ``branch_id`` (``last`` None: open-ended, the branch itself).
    ``pinned_page`` is the page the child froze for floor ``last`` when it forked."""

    branch_id: int
    first: int
    last: int | None
    pinned_page: int | None = None

    def holds(self, seq: int) -> bool:
        """Whether floor position ``seq`` of this segment's branch is in the lineage."""
        return seq >= self.first and (self.last is None or seq <= self.last)


@dataclass(frozen=True, slots=True, kw_only=True)
class Lineage:
    """The segments a branch sees, root first; the last one is the branch itself."""

    branch: Branch
    segments: tuple[Segment, ...]

    def segment_of(self, seq: int) -> Segment:
        """The segment that owns floor position ``seq`` (the deepest one holding it)."""
        for segment in reversed(self.segments):
            if segment.holds(seq):
                return segment
        return self.segments[0]

    def owner_of(self, seq: int) -> int:
        """The id of the branch whose floor ``seq`` is part of this lineage."""
        return self.segment_of(seq).branch_id

    def sees(self, branch_id: int, seq: int) -> bool:
        """Whether a floor (or an explicit write) of ``branch_id`` at ``seq`` is visible."""
        return any(s.branch_id == branch_id and s.holds(seq) for s in self.segments)

    def pinned(self, branch_id: int, seq: int) -> int | None:
        """The page a fork froze for floor ``seq`` of ``branch_id``, if any."""
        for segment in self.segments:
            if segment.branch_id == branch_id and segment.last == seq:
                return segment.pinned_page
        return None

    @property
    def base(self) -> int:
        """The last floor position this branch inherits (0 for a root branch)."""
        return self.segments[-1].first - 1


def build_lineage(branch: Branch, branches: Iterable[Branch]) -> Lineage:
    """The lineage of ``branch`` given every branch of its session."""
    by_id = {b.id: b for b in branches}
    by_id[branch.id] = branch
    chain = [branch]
    seen = {branch.id}
    while chain[-1].parent_id is not None:
        parent = by_id.get(chain[-1].parent_id)
        if parent is None or parent.id in seen:
            raise TimelineNotFoundError(
                f"branch {chain[-1].name!r}: parent branch {chain[-1].parent_id} is missing"
            )
        seen.add(parent.id)
        chain.append(parent)
    chain.reverse()
    segments: list[Segment] = []
    for index, item in enumerate(chain):
        child = chain[index + 1] if index + 1 < len(chain) else None
        first = (item.fork_floor or 0) + 1
        segments.append(
            Segment(
                branch_id=item.id,
                first=first,
                last=None if child is None else child.fork_floor or 0,
                pinned_page=None if child is None else child.fork_page,
            )
        )
    return Lineage(branch=branch, segments=tuple(segments))
