"""Small builders for world info tests."""

from __future__ import annotations

from typing import Any

from engine.formats.worldbook import WorldBook, WorldEntry
from engine.prompt.wi_sources import BookSource, ListWindow, WorldInfoSettings
from engine.prompt.worldinfo import WorldInfoRequest, WorldInfoResult, scan_world_info


def entry(uid: int, *keys: str, **fields: Any) -> WorldEntry:
    fields.setdefault("content", f"E{uid}")
    return WorldEntry(uid=uid, keys=keys, **fields)


def book(*entries: WorldEntry, name: str = "B") -> WorldBook:
    return WorldBook(name=name, entries=entries)


def scan(
    books: list[WorldBook] | WorldBook,
    chat: list[str],
    *,
    settings: WorldInfoSettings | None = None,
    **kw: Any,
) -> WorldInfoResult:
    """Scan with ``chat`` given oldest first (as people read it)."""
    items = books if isinstance(books, list) else [books]
    request = WorldInfoRequest(
        books=[BookSource(book=b) for b in items],
        window=ListWindow(list(reversed(chat))),
        settings=settings or WorldInfoSettings(),
        **kw,
    )
    return scan_world_info(request)


def uids(result: WorldInfoResult) -> set[int]:
    return {e.uid for e in result.activated}
