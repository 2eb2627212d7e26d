"""The outcome of a world info scan, grouped by where each entry goes in the prompt."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.formats.worldbook import (
    DEFAULT_DEPTH,
    POS_AFTER,
    POS_AN_BOTTOM,
    POS_AN_TOP,
    POS_AT_DEPTH,
    POS_BEFORE,
    POS_EM_BOTTOM,
    POS_EM_TOP,
    POS_OUTLET,
    ROLE_SYSTEM,
    WorldEntry,
)
from engine.prompt.wi_timed import TimedState

FIRED_CONSTANT = "constant"
"""``fired_by`` of a constant entry."""
FIRED_FORCED = "forced"
"""``fired_by`` of an entry the request forced (a macro or a script activated it)."""
FIRED_STICKY = "sticky"
"""``fired_by`` of an entry kept on by its sticky timed effect."""
FIRED_DECORATOR = "@@activate"
"""``fired_by`` of an entry whose ``@@activate`` decorator activates it."""

POSITION_NAMES = {
    POS_BEFORE: "before",
    POS_AFTER: "after",
    POS_AN_TOP: "an_top",
    POS_AN_BOTTOM: "an_bottom",
    POS_AT_DEPTH: "at_depth",
    POS_EM_TOP: "em_top",
    POS_EM_BOTTOM: "em_bottom",
    POS_OUTLET: "outlet",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ActivatedEntry:
    """An entry that made it into the prompt, with its final (macro- and regex-processed)
    content. ``key`` is ``"<book>.<uid>"``."""

    key: str
    book: str
    uid: int
    comment: str
    position: int
    order: float
    depth: int
    role: int
    outlet_name: str
    content: str
    fired_by: str = ""
    """What activated it: the primary key that matched (``key + secondary, ...`` with the
    secondary keys that matched too), or :data:`FIRED_CONSTANT`, :data:`FIRED_FORCED`,
    :data:`FIRED_STICKY` or :data:`FIRED_DECORATOR`."""

    def to_json(self) -> dict[str, Any]:
        """A plain summary for dry runs and logs."""
        return {
            "key": self.key,
            "book": self.book,
            "uid": self.uid,
            "comment": self.comment,
            "position": POSITION_NAMES.get(self.position, str(self.position)),
            "order": self.order,
            "depth": self.depth,
            "role": self.role,
            "outlet": self.outlet_name,
            "content": self.content,
            "fired_by": self.fired_by,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class DepthInjection:
    """World info entries inserted into the chat at ``depth`` with ``role`` (0/1/2)."""

    depth: int
    role: int
    entries: tuple[ActivatedEntry, ...]

    @property
    def content(self) -> str:
        """The entries joined by newlines (ascending order)."""
        return "\n".join(e.content for e in self.entries)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorldInfoResult:
    """Activated entries per position (each list in ascending ``order``, outlets descending,
    as SillyTavern emits them) and the timed-effect state to persist."""

    activated: tuple[ActivatedEntry, ...] = ()
    before: tuple[ActivatedEntry, ...] = ()
    after: tuple[ActivatedEntry, ...] = ()
    an_top: tuple[ActivatedEntry, ...] = ()
    an_bottom: tuple[ActivatedEntry, ...] = ()
    em_top: tuple[ActivatedEntry, ...] = ()
    em_bottom: tuple[ActivatedEntry, ...] = ()
    depth: tuple[DepthInjection, ...] = ()
    outlets: Mapping[str, tuple[ActivatedEntry, ...]] = field(default_factory=dict)
    timed_state: TimedState = field(default_factory=TimedState)
    budget: int = 0
    # What the last admitted entry was measured at: SillyTavern's count of the recursion text
    # of earlier passes plus its pass's contents joined with newlines.
    used_tokens: int = 0
    overflowed: bool = False
    passes: int = 0

    @property
    def before_text(self) -> str:
        """The ``worldInfoBefore`` text."""
        return "\n".join(e.content for e in self.before)

    @property
    def after_text(self) -> str:
        """The ``worldInfoAfter`` text."""
        return "\n".join(e.content for e in self.after)

    def outlet_texts(self) -> dict[str, str]:
        """Outlet name -> text, for the ``{{outlet::name}}`` macro."""
        return {name: "\n".join(e.content for e in items) for name, items in self.outlets.items()}


def build_result(
    activated: Sequence[tuple[str, str, WorldEntry, str]],
    *,
    regex: Callable[[str, int | None], str],
    timed_state: TimedState,
    budget: int,
    used_tokens: int,
    overflowed: bool,
    passes: int,
    fired: Mapping[str, str] | None = None,
) -> WorldInfoResult:
    """Group activated ``(key, book, entry, content)`` items by position."""
    ordered = sorted(activated, key=lambda item: -item[2].order)
    kept: list[ActivatedEntry] = []
    for key, book, entry, content in ordered:
        depth = entry.depth if entry.depth is not None else DEFAULT_DEPTH
        text = regex(content, depth if entry.position == POS_AT_DEPTH else None)
        if not text:
            continue
        kept.append(
            ActivatedEntry(
                key=key,
                book=book,
                uid=entry.uid,
                comment=entry.comment,
                position=entry.position,
                order=entry.order,
                depth=depth,
                role=ROLE_SYSTEM if entry.role is None else entry.role,
                outlet_name=entry.outlet_name,
                content=text,
                fired_by=(fired or {}).get(key, ""),
            )
        )
    ascending = list(reversed(kept))  # SillyTavern unshifts: the highest order ends up last

    def at(position: int) -> tuple[ActivatedEntry, ...]:
        return tuple(e for e in ascending if e.position == position)

    groups: dict[tuple[int, int], list[ActivatedEntry]] = {}
    for e in ascending:
        if e.position == POS_AT_DEPTH:
            groups.setdefault((e.depth, e.role), []).append(e)
    outlets: dict[str, list[ActivatedEntry]] = {}
    for e in kept:  # pushed in descending order
        if e.position == POS_OUTLET and e.outlet_name:
            outlets.setdefault(e.outlet_name, []).append(e)
    return WorldInfoResult(
        activated=tuple(kept),
        before=at(POS_BEFORE),
        after=at(POS_AFTER),
        an_top=at(POS_AN_TOP),
        an_bottom=at(POS_AN_BOTTOM),
        em_top=at(POS_EM_TOP),
        em_bottom=at(POS_EM_BOTTOM),
        depth=tuple(
            DepthInjection(depth=d, role=r, entries=tuple(items))
            for (d, r), items in sorted(groups.items())
        ),
        outlets={name: tuple(items) for name, items in outlets.items()},
        timed_state=timed_state,
        budget=budget,
        used_tokens=used_tokens,
        overflowed=overflowed,
        passes=passes,
    )
