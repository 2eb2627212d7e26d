"""The floor and page state machines.

Floors move ``draft -> generating -> committed | failed`` (a draft may also fail). Pages move
``pending -> committed | failed``. Nothing leaves ``committed`` or ``failed``: a committed
floor only ever gains pages, a failed one is kept for diagnosis. Storage applies each move as a
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
