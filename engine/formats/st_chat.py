"""SillyTavern chat files (JSONL): import into a neutral :class:`ChatLog` and export back.

The first line is the header (ST 1.15 ``{"chat_metadata", "user_name", "character_name"}``,
older ``{"user_name", "character_name", "create_date", ...}``), every other line one message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatPage:
    """One swipe of a message: its text and the parallel ``swipe_info`` object (if any)."""

    text: str
    send_date: datetime | None = None
    info: Mapping[str, object] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatEntry:
    """One message line. ``swipes`` are the pages; ``text`` is the current page's text."""

    name: str
    is_user: bool
    is_system: bool = False
    text: str
    send_date: datetime | None = None
    swipes: tuple[ChatPage, ...] = ()
    swipe_id: int = 0
    extra: Mapping[str, object]
    raw: Mapping[str, object]


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatLog:
    """A whole chat: header fields, free-form ``chat_metadata`` and the messages in order."""

    user_name: str | None = None
    character_name: str | None = None
    create_date: datetime | None = None
    chat_metadata: Mapping[str, object]
    header: Mapping[str, object] | None
    entries: tuple[ChatEntry, ...]
