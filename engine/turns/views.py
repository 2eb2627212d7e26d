"""Floors as front ends show them (:class:`~engine.turns.api.ReplyView`).

Front ends count pages among the *committed* pages of a floor (a failed regenerate leaves a
page behind that is never shown), so page ``n`` of a view is the n-th committed page. A failed
floor stays in the history, shown with its input and marked failed (it can be retried).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from engine.timeline.values import FloorView, Page
from engine.turns.api import ReplyView, SessionKey
from engine.turns.st_lines import DEFAULT_USER_NAME

UNANSWERED_META: Final = "unanswered"
"""Page meta key of a group floor nobody answered: its page commits with no reply
(:mod:`engine.turns.group_turns`)."""


def committed_numbers(pages: Sequence[Page]) -> list[int]:
    """The numbers of the committed pages, in order."""
    return [p.number for p in sorted(pages, key=lambda p: p.number) if p.status == "committed"]


def shown_index(pages: Sequence[Page], number: int | None) -> int:
    """The 1-based position of page ``number`` among the committed pages (0: not there)."""
    numbers = committed_numbers(pages)
    return numbers.index(number) + 1 if number in numbers else 0


def page_number(pages: Sequence[Page], index: int) -> int | None:
    """The page number shown as position ``index`` (1-based), if any."""
    numbers = committed_numbers(pages)
    return numbers[index - 1] if 1 <= index <= len(numbers) else None


def input_pairs(view: FloorView) -> tuple[tuple[str, str], ...]:
    """The floor's visible user input as ``(speaker name, text)`` pairs."""
    return tuple(
        (m.speaker_name or DEFAULT_USER_NAME, m.display)
        for m in view.inputs
        if not m.hidden and m.role == "user"
    )


def reply_view(key: SessionKey, view: FloorView) -> ReplyView:
    """The active page of one floor with its input; for a failed floor, its input marked
    failed."""
    if view.floor.state == "failed":
        inputs = [m for m in view.inputs if not m.hidden]
        return ReplyView(
            session=key,
            branch=view.branch_name,
            floor=view.floor.seq,
            page=0,
            pages=0,
            text="\n".join(m.display for m in inputs),
            character="",
            failed=True,
            error=view.floor.error,
            inputs=input_pairs(view),
        )
    active = view.active
    hidden = active is not None and active.hidden  # a deleted platform message hid it
    replies = [m for m in view.replies if not m.hidden and not hidden]
    character = next((m.speaker_name for m in replies if m.speaker_name), "") or ""
    return ReplyView(
        session=key,
        branch=view.branch_name,
        floor=view.floor.seq,
        page=shown_index(view.pages, view.floor.active_page),
        pages=len(committed_numbers(view.pages)),
        text="\n".join(m.display for m in replies),
        character=character,
        inputs=input_pairs(view),
        unanswered=active is not None and active.meta.get(UNANSWERED_META) is True,
    )


def views_of(
    key: SessionKey, floors: Sequence[FloorView], *, include_hidden: bool = False
) -> list[ReplyView]:
    """Views of the floors, oldest first: the hidden ones left out, or with
    ``include_hidden`` kept and marked."""
    return [
        replace(reply_view(key, f), hidden=True) if f.floor.hidden else reply_view(key, f)
        for f in floors
        if include_hidden or not f.floor.hidden
    ]
