"""The values the timeline and variables pages show, built from the engine's reads: the branch
tree (each branch with its depth, parent and fork point) and each floor with its pages."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.timeline.values import FloorView, Message, Page
from engine.turns.api import BranchInfo


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeBranch:
    """A branch in the tree, in display order (a child right after its parent's line)."""

    name: str
    parent: str | None
    fork_floor: int | None
    floors: int
    depth: int


def branch_tree(branches: Sequence[BranchInfo]) -> list[TreeBranch]:
    """The branches as a tree, depth first (roots and children in name order, ``main``
    first)."""
    children: dict[str | None, list[BranchInfo]] = {}
    names = {b.name for b in branches}
    for branch in branches:
        parent = branch.parent if branch.parent in names else None
        children.setdefault(parent, []).append(branch)
    out: list[TreeBranch] = []

    def walk(parent: str | None, depth: int) -> None:
        for branch in sorted(children.get(parent, []), key=lambda b: (b.name != "main", b.name)):
            out.append(
                TreeBranch(
                    name=branch.name,
                    parent=branch.parent,
                    fork_floor=branch.fork_floor,
                    floors=branch.floors,
                    depth=depth,
                )
            )
            walk(branch.name, depth + 1)

    walk(None, 0)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class PageLine:
    """One page (swipe) of a floor."""

    id: int
    number: int
    status: str
    hidden: bool
    active: bool
    error: str | None
    text: str
    models: tuple[str, ...]
    usage: Mapping[str, Any]
    tool_records: tuple[Mapping[str, Any], ...]
    meta: Mapping[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorLine:
    """One floor of the branch as the timeline lists it."""

    id: int
    seq: int
    branch: str
    state: str
    hidden: bool
    speaker: str | None
    active_page: int | None
    pages: tuple[PageLine, ...]
    inputs: tuple[tuple[str, str], ...]
    """``(speaker, text)`` of each visible input message."""

    @property
    def failed(self) -> bool:
        """Whether the floor failed (its input kept, no reply)."""
        return self.state == "failed"

    @property
    def active(self) -> PageLine | None:
        """The active page."""
        return next((p for p in self.pages if p.active), None)

    @property
    def swipe(self) -> str:
        """The swipe position as people read it: ``2/3``."""
        if self.active_page is None or not self.pages:
            return "—"
        return f"{self.active_page}/{len(self.pages)}"


def _models(meta: Mapping[str, Any]) -> tuple[str, ...]:
    profiles = meta.get("profiles")
    if not isinstance(profiles, Mapping):
        return ()
    found = [
        f"{slot}: {entry.get('model')}"
        for slot, entry in profiles.items()
        if isinstance(entry, Mapping) and entry.get("model")
    ]
    return tuple(found)


def _records(meta: Mapping[str, Any]) -> tuple[Mapping[str, Any], ...]:
    records = meta.get("tool_records")
    if not isinstance(records, list):
        return ()
    return tuple(r for r in records if isinstance(r, Mapping))


def page_line(page: Page, *, active: bool, messages: Sequence[Message]) -> PageLine:
    """A page with the text of its own messages."""
    usage = page.meta.get("usage")
    return PageLine(
        id=page.id,
        number=page.number,
        status=page.status,
        hidden=page.hidden,
        active=active,
        error=page.error,
        text="\n\n".join(m.display for m in messages if m.page_id == page.id),
        models=_models(page.meta),
        usage=usage if isinstance(usage, Mapping) else {},
        tool_records=_records(page.meta),
        meta=page.meta,
    )


def floor_line(view: FloorView, messages: Sequence[Message] | None = None) -> FloorLine:
    """A floor of the history; ``messages`` (every message of the floor) gives each page its
    text, else only the active page's replies are known."""
    known = list(messages) if messages is not None else [*view.inputs, *view.replies]
    pages = tuple(
        page_line(page, active=page.number == view.floor.active_page, messages=known)
        for page in view.pages
    )
    return FloorLine(
        id=view.floor.id,
        seq=view.floor.seq,
        branch=view.branch_name,
        state=view.floor.state,
        hidden=view.floor.hidden,
        speaker=view.floor.speaker,
        active_page=view.floor.active_page,
        pages=pages,
        inputs=tuple((m.speaker_name or m.role, m.display) for m in view.inputs if not m.hidden),
    )
