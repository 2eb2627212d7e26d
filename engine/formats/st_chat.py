"""SillyTavern chat files (JSONL): import into a neutral :class:`ChatLog` and export back.

The first line is the header (ST 1.15 ``{"chat_metadata", "user_name", "character_name"}``,
ST <= 1.13 ``{"user_name", "character_name", "create_date", "chat_metadata"}``, TavernAI-era
``{"user_name", "character_name", "create_date": <ms>}``); group chats before 1.15 have no header
at all, so a first line that looks like a message (it has ``mes``) is read as a message. Every
other line is one message; swipes become pages.

Timestamps are read as SillyTavern reads them (:mod:`engine.formats.st_dates`).

What an import -> export round trip may change (everything else is kept, unknown keys included):

* every line is re-serialised compactly like ``JSON.stringify`` (UTF-8, no ``\\u`` escapes for
  non-ASCII, no spaces); a number's spelling may change (``1e3`` -> ``1000.0``), never its value;
* empty lines are dropped; the file ends without a trailing newline, as ST writes it;
* a file without a header (an old group chat) gains an ST 1.15 header only when there is
  metadata to write (chat variables set since);
* a date is rewritten (as ISO 8601 with milliseconds, like ST 1.15) only if its value was changed.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from engine.errors import FormatError
from engine.formats.json_input import (
    MAX_IMPORT_JSON_DEPTH,
    check_decoded,
    decode_text,
    get_bool,
    get_str,
    type_name,
)
from engine.formats.st_dates import format_timestamp, parse_timestamp

# A chat file bigger than this is refused (the longest real chats are tens of MB).
MAX_CHAT_BYTES = 512 * 1024 * 1024
MAX_LISTED_BAD_LINES: Final = 5
"""A chat file with lines that are not JSON is refused naming at most this many of them (the
rest are counted), so the error stays one readable line."""


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
    extra: Mapping[str, object] = field(default_factory=dict)
    raw: Mapping[str, object] = field(default_factory=dict)  # the imported line, if any

    @property
    def is_hidden(self) -> bool:
        """Hidden from the prompt by the user (SillyTavern's ``/hide``, the eye button): marked
        ``is_system`` without a system-message ``extra.type``; ST's own system notes (help,
        comments, ...) carry a type, a hidden message keeps its own name and ``is_user``."""
        return self.is_system and not self.extra.get("type")

    @property
    def pages(self) -> tuple[ChatPage, ...]:
        """The swipes, or the message text as the only page when there are none."""
        if self.swipes:
            return self.swipes
        return (ChatPage(text=self.text, send_date=self.send_date),)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatLog:
    """A whole chat: header fields, free-form ``chat_metadata`` and the messages in order."""

    user_name: str | None = None
    character_name: str | None = None
    create_date: datetime | None = None
    chat_metadata: Mapping[str, object] = field(default_factory=dict)
    header: Mapping[str, object] | None = None  # the imported header line, if any
    entries: tuple[ChatEntry, ...] = ()
    headerless: bool = False
    """The file had no header line (a group chat before ST 1.15): written back without one
    while there is no metadata to write (a log built in code without a header gets one)."""


def parse_chat(data: bytes | str, *, source: str) -> ChatLog:
    """Read a SillyTavern chat file; malformed content raises FormatError (file, line, field).

    A line that is not JSON (SillyTavern would skip it silently) refuses the whole file: the
    error names those lines and what is wrong with each (:data:`MAX_LISTED_BAD_LINES` of
    them, the rest counted). Importing the rest would lose the message silently and shift
    the floors; refusing leaves nothing half-imported and the user can mend the file.
    """
    if len(data) > MAX_CHAT_BYTES:
        raise FormatError(
            f"file is {len(data)} bytes, over MAX_CHAT_BYTES={MAX_CHAT_BYTES}", source=source
        )
    text = decode_text(data, source=source) if isinstance(data, bytes) else data
    objects: list[tuple[int, dict[str, object]]] = []
    bad: list[tuple[int, str]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line, parse_constant=_reject, parse_float=_finite)
        except json.JSONDecodeError as exc:
            bad.append((number, f"{exc.msg} at column {exc.colno}"))
            continue
        except ValueError as exc:
            bad.append((number, str(exc)))
            continue
        except RecursionError:
            bad.append(
                (number, f"nests deeper than MAX_IMPORT_JSON_DEPTH={MAX_IMPORT_JSON_DEPTH}")
            )
            continue
        if not isinstance(value, dict):
            raise FormatError(
                f"expected a chat header or message object, got {type_name(value)}",
                source=source,
                field=f"line {number}",
            )
        check_decoded(value, source=source, field=f"line {number}")
        objects.append((number, value))
    if bad:
        raise _not_json(bad, source=source)
    if not objects:
        raise FormatError("no chat header or message in the file", source=source)
    header: dict[str, object] | None = None
    if _is_header(objects[0][1]):
        header = objects.pop(0)[1]
    entries = tuple(_entry(obj, source=source, line=n) for n, obj in objects)
    if header is None:
        return ChatLog(chat_metadata={}, header=None, entries=entries, headerless=True)
    metadata = header.get("chat_metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise FormatError(
            f"expected an object, got {type_name(metadata)}",
            source=source,
            field="line 1: chat_metadata",
        )
    return ChatLog(
        user_name=_opt_str(header, "user_name", source=source),
        character_name=_opt_str(header, "character_name", source=source),
        create_date=parse_timestamp(header.get("create_date")),
        chat_metadata=metadata,
        header=header,
        entries=entries,
    )


def _not_json(bad: list[tuple[int, str]], *, source: str) -> FormatError:
    listed = "; ".join(f"line {n}: not JSON ({why})" for n, why in bad[:MAX_LISTED_BAD_LINES])
    rest = len(bad) - MAX_LISTED_BAD_LINES
    more = f"; and {rest} more lines that are not JSON" if rest > 0 else ""
    return FormatError(f"{listed}{more}; nothing was imported", source=source)


def _reject(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e999: JS would read Infinity, which JSON cannot write back
        raise ValueError("number out of range")
    return value


def _is_header(obj: Mapping[str, object]) -> bool:
    if "mes" in obj:
        return False
    return any(key in obj for key in ("chat_metadata", "user_name", "character_name"))


def _opt_str(obj: Mapping[str, object], key: str, *, source: str) -> str | None:
    if obj.get(key) is None:
        return None
    return get_str(obj, key, source=source, field=f"line 1: {key}")


def _entry(obj: dict[str, object], *, source: str, line: int) -> ChatEntry:
    def where(key: str) -> str:
        return f"line {line}: {key}"

    extra = obj.get("extra")
    if extra is None:
        extra = {}
    if not isinstance(extra, dict):
        raise FormatError(
            f"expected an object, got {type_name(extra)}", source=source, field=where("extra")
        )
    swipes = _pages(obj, source=source, where=where)
    swipe_id = obj.get("swipe_id", 0)
    if swipe_id is None:
        swipe_id = 0
    if isinstance(swipe_id, bool) or not isinstance(swipe_id, int):
        raise FormatError(
            f"expected an integer, got {type_name(swipe_id)}",
            source=source,
            field=where("swipe_id"),
        )
    if swipes and not 0 <= swipe_id < len(swipes):
        raise FormatError(
            f"swipe_id {swipe_id} is outside the {len(swipes)} swipes",
            source=source,
            field=where("swipe_id"),
        )
    return ChatEntry(
        name=get_str(obj, "name", source=source, field=where("name")),
        is_user=get_bool(obj, "is_user", source=source, field=where("is_user"), default=False),
        is_system=get_bool(
            obj, "is_system", source=source, field=where("is_system"), default=False
        ),
        text=get_str(obj, "mes", source=source, field=where("mes")),
        send_date=parse_timestamp(obj.get("send_date")),
        swipes=swipes,
        swipe_id=swipe_id,
        extra=extra,
        raw=obj,
    )


def _pages(
    obj: Mapping[str, object], *, source: str, where: Callable[[str], str]
) -> tuple[ChatPage, ...]:
    swipes = obj.get("swipes")
    if swipes is None:
        return ()
    if not isinstance(swipes, list):
        raise FormatError(
            f"expected an array, got {type_name(swipes)}", source=source, field=where("swipes")
        )
    infos = obj.get("swipe_info")
    if infos is None:
        infos = []
    if not isinstance(infos, list):
        raise FormatError(
            f"expected an array, got {type_name(infos)}", source=source, field=where("swipe_info")
        )
    pages: list[ChatPage] = []
    for i, swipe in enumerate(swipes):
        if swipe is None:
            swipe = ""
        if not isinstance(swipe, str):
            raise FormatError(
                f"expected a string, got {type_name(swipe)}",
                source=source,
                field=where(f"swipes[{i}]"),
            )
        info = infos[i] if i < len(infos) else None
        if info is not None and not isinstance(info, dict):
            raise FormatError(
                f"expected an object, got {type_name(info)}",
                source=source,
                field=where(f"swipe_info[{i}]"),
            )
        date = parse_timestamp(info.get("send_date")) if info else None
        pages.append(ChatPage(text=swipe, send_date=date, info=info))
    return tuple(pages)


def chat_to_jsonl(log: ChatLog) -> str:
    """The chat as SillyTavern JSONL: compact lines joined by ``\\n``, no trailing newline.

    Starts from each line's original object (``header``/``raw``) so unknown keys survive; the
    engine-visible fields overwrite it. A log without a header gets an ST 1.15 header, unless
    it was read from a file without one and has no metadata (nor messages) to write.
    """
    lines: list[str] = []
    if not (log.headerless and not log.chat_metadata and log.entries):
        lines.append(_dump(_header_to_json(log)))
    lines.extend(_dump(_entry_to_json(entry)) for entry in log.entries)
    return "\n".join(lines)


def chat_to_jsonl_bytes(log: ChatLog) -> bytes:
    """:func:`chat_to_jsonl` encoded as UTF-8."""
    return chat_to_jsonl(log).encode("utf-8")


def _dump(obj: Mapping[str, object]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _header_to_json(log: ChatLog) -> dict[str, object]:
    if log.header is None:
        return {
            "chat_metadata": copy.deepcopy(dict(log.chat_metadata)),
            "user_name": log.user_name if log.user_name is not None else "unused",
            "character_name": log.character_name if log.character_name is not None else "unused",
        }
    out = copy.deepcopy(dict(log.header))
    if log.user_name is not None:
        out["user_name"] = log.user_name
    if log.character_name is not None:
        out["character_name"] = log.character_name
    if "chat_metadata" in out or log.chat_metadata:
        out["chat_metadata"] = copy.deepcopy(dict(log.chat_metadata))
    _put_date(out, "create_date", log.create_date)
    return out


def _put_date(out: dict[str, object], key: str, value: datetime | None) -> None:
    """Keep the stored spelling of a date unless its value changed."""
    if parse_timestamp(out.get(key)) == value:
        return
    if value is None:
        out.pop(key, None)
    else:
        out[key] = format_timestamp(value)


def _entry_to_json(entry: ChatEntry) -> dict[str, object]:
    out = copy.deepcopy(dict(entry.raw))
    out["name"] = entry.name
    out["is_user"] = entry.is_user
    if "is_system" in out or entry.is_system or not entry.raw:
        out["is_system"] = entry.is_system
    _put_date(out, "send_date", entry.send_date)
    out["mes"] = entry.text
    if entry.swipes:
        out["swipes"] = [page.text for page in entry.swipes]
        out["swipe_id"] = entry.swipe_id
        dated = any(p.info is not None or p.send_date is not None for p in entry.swipes)
        if "swipe_info" in out or not entry.raw or dated:
            infos: list[object] = []
            for page in entry.swipes:
                info = copy.deepcopy(dict(page.info)) if page.info is not None else {}
                _put_date(info, "send_date", page.send_date)
                infos.append(info)
            out["swipe_info"] = infos
    elif isinstance(out.get("swipes"), list) and out["swipes"]:
        for key in ("swipes", "swipe_id", "swipe_info"):
            out.pop(key, None)
    if entry.extra or isinstance(out.get("extra"), Mapping):  # a null extra stays null
        out["extra"] = copy.deepcopy(dict(entry.extra))
    return out
