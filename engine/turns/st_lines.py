"""SillyTavern chat lines of a branch's floors, for :mod:`engine.turns.transfer`'s export.

A floor's inputs and its reply become lines; a chat imported with its kept fields
(:mod:`engine.formats.st_kept`) starts from them, so an untouched line comes back as it was
read, and what changed since (a new swipe, a hidden message) is written over it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final
from urllib.parse import quote

from engine.formats.archive_st import TRAILING_INPUT_ERROR
from engine.formats.st_chat import ChatEntry, ChatPage
from engine.formats.st_dates import parse_timestamp
from engine.formats.st_kept import (
    INPUTS_META,
    LINE_META,
    SWIPE_INFO_META,
    SWIPES_META,
    is_full,
)
from engine.timeline.values import Branch, Floor, Message, Page

NARRATOR_TYPE: Final = "narrator"
DEFAULT_USER_NAME: Final = "User"
"""The user's name on an exported line or header when the session never named them."""
NOTE_TYPE: Final = "generic"
"""SillyTavern's ``extra.type`` of a narrator message and of a generic system message: an
exported system note carries one, so that importing it back does not read it as hidden."""


def ancestry(branch: Branch, branches: list[Branch]) -> list[str]:
    """The branch's name, then its parent's, and so on (a fork of an imported chat exports
    with that chat's header)."""
    by_id = {b.id: b for b in branches}
    names: list[str] = []
    current: Branch | None = branch
    while current is not None and current.name not in names:
        names.append(current.name)
        current = by_id.get(current.parent_id) if current.parent_id is not None else None
    return names


def kept_inputs(floor: Floor, line_page: Page | None, trailing: object) -> list[object]:
    """The kept lines of a floor's inputs: on its page 1, or (the failed floor an import
    ends with) the trailing lines of the imported file."""
    if line_page is not None:
        found = line_page.meta.get(INPUTS_META)
        return list(found) if isinstance(found, list) else []
    if floor.state == "failed" and floor.error == TRAILING_INPUT_ERROR:
        return list(trailing) if isinstance(trailing, list) else []
    return []


def input_entries(
    floor: Floor, messages: list[Message], kept: list[object], *, include_hidden: bool
) -> list[ChatEntry]:
    """The floor's input messages as lines (hidden ones only with ``include_hidden``)."""
    out: list[ChatEntry] = []
    inputs = [m for m in messages if m.page_id is None]
    for index, m in enumerate(inputs):
        hidden = floor.hidden or m.hidden
        if include_hidden or not hidden:
            line = kept[index] if index < len(kept) else None
            out.append(_entry(m, is_user=m.role == "user", hidden=hidden, kept=line))
    return out


def _entry(
    message: Message, *, is_user: bool, hidden: bool = False, kept: object = None
) -> ChatEntry:
    """An input message as a line (its kept line under it, when it was imported)."""
    note = message.role in ("system", "narrator")
    if is_full(kept):
        assert isinstance(kept, Mapping)
        extra = kept.get("extra")
        return ChatEntry(
            name=message.speaker_name or "",
            is_user=is_user,
            is_system=hidden or note,
            text=message.raw,
            send_date=parse_timestamp(kept.get("send_date")),
            extra=dict(extra) if isinstance(extra, Mapping) else {},
            raw=dict(kept),
        )
    return ChatEntry(
        name=message.speaker_name or (DEFAULT_USER_NAME if is_user else ""),
        is_user=is_user,
        # SillyTavern marks hidden messages and system notes alike with is_system; a note
        # carries its message type, which tells it from a hidden message on import.
        is_system=hidden or note,
        text=message.raw,
        send_date=message.created_at,
        extra={"type": NARRATOR_TYPE if message.role == "narrator" else NOTE_TYPE} if note else {},
    )


def reply_entry(
    reply: list[Message],
    active: Page,
    shown: list[Page],
    texts: Mapping[int, str],
    *,
    line_page: Page | None,
    hidden: bool,
    avatar: str | None = None,
) -> ChatEntry:
    """A floor's reply line: its shown pages as swipes, the kept line's fields (when it was
    imported) under the engine's own. ``avatar``: a group member's avatar file name, written
    as SillyTavern marks a group reply (``force_avatar``, ``original_avatar``) unless the
    kept line has its own."""
    kept = line_page.meta.get(LINE_META) if line_page is not None else None
    full = line_page is not None and is_full(kept)
    raw: dict[str, Any] = dict(kept) if isinstance(kept, Mapping) else {}
    if avatar is not None and "force_avatar" not in raw:
        raw["force_avatar"] = f"/thumbnail?type=avatar&file={quote(avatar)}"
        raw["original_avatar"] = avatar
    had_swipes = line_page is not None and full and bool(line_page.meta.get(SWIPES_META))
    infos = {p.number: _info(p) for p in shown}
    if any(i is not None for i in infos.values()):
        raw["swipe_info"] = []  # rebuilt from the pages below
    send_date: datetime | None = reply[0].created_at
    extra = _mapping(raw.get("extra"))
    if full:
        info = infos.get(active.number)
        if active.number == _int(raw.get("swipe_id")) + 1:  # the page shown when imported
            send_date = parse_timestamp(raw.get("send_date"))
        elif info is not None:
            # Another kept swipe shown now: its own date and extra, as SillyTavern swipes.
            send_date = parse_timestamp(info.get("send_date")) or send_date
            extra = _mapping(info.get("extra"))
        else:
            extra = {}  # a page made here: the kept line's extra was another swipe's
    pages = tuple(
        ChatPage(
            text=texts[p.number], send_date=_page_date(p, infos[p.number]), info=infos[p.number]
        )
        for p in shown
    )
    swipes = pages if len(pages) > 1 or had_swipes else ()
    return ChatEntry(
        name=reply[0].speaker_name or "",
        is_user=False,
        is_system=hidden,
        text="".join(m.raw for m in reply),
        send_date=send_date,
        swipes=swipes,
        swipe_id=[p.number for p in shown].index(active.number) if swipes else 0,
        extra=extra,
        raw=raw,
    )


def _info(page: Page) -> Mapping[str, object] | None:
    found = page.meta.get(SWIPE_INFO_META)
    return found if isinstance(found, Mapping) else None


def _mapping(value: object) -> dict[str, object]:
    return dict(value) if isinstance(value, Mapping) else {}


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _page_date(page: Page, info: Mapping[str, object] | None) -> datetime | None:
    """A swipe's date: its kept ``swipe_info`` date, else (a page made here) when it was."""
    if info is not None:
        return parse_timestamp(info.get("send_date"))
    if LINE_META in page.meta:
        return None
    return page.created_at
