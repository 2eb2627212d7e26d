"""The floor and page state machines.

Floors move ``draft -> generating -> committed | failed`` (a draft may also fail). Pages move
``pending -> committed | failed``. Nothing leaves ``committed``: a committed floor only ever
gains pages. A failed floor keeps its number, its input and its failed pages for diagnosis;
the one way out of ``failed`` is a :data:`RETRY` of the branch's latest floor, which adds a
page and makes the floor ``generating`` again. Storage applies each move as a
compare-and-set, so two racing writers cannot both win.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from engine.timeline.errors import FloorTransitionError, PageTransitionError
from engine.timeline.values import FloorState, PageStatus

FLOOR_TRANSITIONS: Final[Mapping[FloorState, frozenset[FloorState]]] = {
    "draft": frozenset({"generating", "failed"}),
    "generating": frozenset({"committed", "failed"}),
    "committed": frozenset(),
    "failed": frozenset(),
}

RETRY: Final[tuple[FloorState, FloorState]] = ("failed", "generating")
"""The retry of a failed floor (``TimelineService.add_page`` only, never a plain move)."""

PAGE_TRANSITIONS: Final[Mapping[PageStatus, frozenset[PageStatus]]] = {
    "pending": frozenset({"committed", "failed"}),
    "committed": frozenset(),
    "failed": frozenset(),
}


def check_floor_transition(current: FloorState, target: FloorState, *, where: str) -> None:
    """Raise :class:`FloorTransitionError` unless ``current -> target`` is allowed."""
    if target not in FLOOR_TRANSITIONS[current]:
        allowed = ", ".join(sorted(FLOOR_TRANSITIONS[current])) or "nothing"
        raise FloorTransitionError(
            f"{where}: a {current} floor cannot become {target} (allowed: {allowed})"
        )


def check_page_transition(current: PageStatus, target: PageStatus, *, where: str) -> None:
    """Raise :class:`PageTransitionError` unless ``current -> target`` is allowed."""
    if target not in PAGE_TRANSITIONS[current]:
        allowed = ", ".join(sorted(PAGE_TRANSITIONS[current])) or "nothing"
        raise PageTransitionError(
            f"{where}: a {current} page cannot become {target} (allowed: {allowed})"
        )
