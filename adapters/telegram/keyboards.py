"""Inline keyboards: the swipe row under the latest reply (🔄 alone under a failed one) and
the branch list.

Callback data carries the action and the branch (at most 64 bytes, Telegram's limit), so a press
works even after a restart, when the adapter no longer remembers which message shows what.
"""

from __future__ import annotations

from collections.abc import Sequence

from aiogram.filters.callback_data import CallbackData
from aiogram.types import InlineKeyboardButton, InlineKeyboardMarkup

from adapters.telegram.config import CALLBACK_DATA_LIMIT
from engine.turns.api import BranchInfo

PREV, NEXT, REGEN, COUNT = "prev", "next", "regen", "count"
BRANCHES_SHOWN = 20
"""How many branches ``/branches`` offers as buttons."""
BRANCH_IN_DATA_MAX = 40
"""Longer branch names are left out of swipe buttons (the press then uses the chat's own
branch); a branch button needs its name, so such branches get no button."""
CURRENT = ""


class SwipeData(CallbackData, prefix="sw"):
    """A press on the swipe row: ``action`` (prev, next, regen, count) on ``branch``."""

    action: str
    branch: str


class BranchData(CallbackData, prefix="br"):
    """A press on the branch list: switch to ``branch``."""

    branch: str


def _packed(data: CallbackData) -> str:
    packed = data.pack()
    if len(packed.encode()) > CALLBACK_DATA_LIMIT:
        raise ValueError(f"callback data over {CALLBACK_DATA_LIMIT} bytes: {packed!r}")
    return packed


def _fits(branch: str) -> bool:
    return len(branch.encode()) <= BRANCH_IN_DATA_MAX


def swipe_keyboard(branch: str, page: int, pages: int) -> InlineKeyboardMarkup:
    """◀️ ``page/pages`` ▶️ 🔄 for the latest reply of ``branch``."""
    branch = branch if _fits(branch) else CURRENT
    row = [
        InlineKeyboardButton(
            text="◀️", callback_data=_packed(SwipeData(action=PREV, branch=branch))
        ),
        InlineKeyboardButton(
            text=f"{page}/{pages}", callback_data=_packed(SwipeData(action=COUNT, branch=branch))
        ),
        InlineKeyboardButton(
            text="▶️", callback_data=_packed(SwipeData(action=NEXT, branch=branch))
        ),
        InlineKeyboardButton(
            text="🔄", callback_data=_packed(SwipeData(action=REGEN, branch=branch))
        ),
    ]
    return InlineKeyboardMarkup(inline_keyboard=[row])


def retry_keyboard(branch: str) -> InlineKeyboardMarkup:
    """🔄 alone, under the error that took a failed floor's reply: it retries the floor (a
    failed floor has no page to swipe to yet)."""
    branch = branch if _fits(branch) else CURRENT
    button = InlineKeyboardButton(
        text="🔄", callback_data=_packed(SwipeData(action=REGEN, branch=branch))
    )
    return InlineKeyboardMarkup(inline_keyboard=[[button]])


def branches_keyboard(branches: Sequence[BranchInfo], current: str) -> InlineKeyboardMarkup:
    """One button per branch (the current one marked) to switch to it."""
    rows = []
    for info in [b for b in branches if _fits(b.name)][:BRANCHES_SHOWN]:
        mark = "✅ " if info.name == current else ""
        label = f"{mark}{info.name} ({info.floors_text})"
        rows.append(
            [InlineKeyboardButton(text=label, callback_data=_packed(BranchData(branch=info.name)))]
        )
    return InlineKeyboardMarkup(inline_keyboard=rows)
