"""Reply text for Telegram: HTML with correct escaping, split at 4096 UTF-16 code units.

The model's text is plain text with role-play markdown (``*action*``, ``**strong**``). It is split
first, on the plain text, at paragraph, line, sentence or word boundaries, and each part is then
escaped and marked up on its own, so every message is valid HTML whatever the split point.
"""

from __future__ import annotations

import html
import re

from adapters.telegram.config import MESSAGE_LIMIT_UTF16

MIN_SPLIT_FRACTION = 0.5
"""A boundary is used only if it keeps at least this share of the allowed length in the part."""
_SENTENCE_END = re.compile(r"[.!?…][\"')\]»”’*]*\s")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*", re.DOTALL)
_ITALIC = re.compile(r"\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*")


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units, as Telegram counts."""
    return len(text.encode("utf-16-le")) // 2


def escape(text: str) -> str:
    """Escape ``<``, ``>`` and ``&`` for Telegram's HTML parse mode."""
    return html.escape(text, quote=False)


def to_html(text: str) -> str:
    """Escape ``text`` and turn ``**strong**`` and ``*action*`` into bold and italics."""
    marked = _BOLD.sub(r"<b>\1</b>", escape(text))
    return _ITALIC.sub(r"<i>\1</i>", marked)


def _prefix_within(text: str, limit: int) -> int:
    """The largest number of code points of ``text`` whose UTF-16 length is at most ``limit``."""
    units = 0
    for index, char in enumerate(text):
        units += 2 if ord(char) > 0xFFFF else 1
        if units > limit:
            return index
    return len(text)


def _cut_point(window: str) -> int:
    """Where to end a part inside ``window``: paragraph, line, sentence, word, else hard."""
    floor = int(len(window) * MIN_SPLIT_FRACTION)
    for finder in (
        lambda w: w.rfind("\n\n"),
        lambda w: w.rfind("\n"),
        lambda w: max((m.end() - 1 for m in _SENTENCE_END.finditer(w)), default=-1),
        lambda w: max(w.rfind(" "), w.rfind("\t")),
    ):
        at = finder(window)
        if at >= floor and at > 0:
            return at
    return len(window)


def split_text(text: str, limit: int = MESSAGE_LIMIT_UTF16) -> list[str]:
    """Split plain ``text`` into parts of at most ``limit`` UTF-16 units on natural boundaries.

    Whitespace at the cut is dropped; a part never ends inside a surrogate pair.
    """
    if limit < 1:
        raise ValueError(f"split limit must be positive, got {limit}")
    parts: list[str] = []
    rest = text.strip()
    while utf16_len(rest) > limit:
        window = rest[: _prefix_within(rest, limit)]
        cut = _cut_point(window)
        part = rest[:cut].rstrip()
        if part:
            parts.append(part)
        rest = rest[cut:].lstrip()
    if rest or not parts:
        parts.append(rest)
    return parts


def render_parts(
    text: str, *, speaker: str | None = None, limit: int = MESSAGE_LIMIT_UTF16
) -> list[str]:
    """The HTML messages that show ``text``; ``speaker`` (groups) prefixes the first in bold.

    An empty text becomes one ellipsis so Telegram never gets an empty message.
    """
    header = f"{speaker}\n" if speaker else ""
    parts = split_text(text, limit - utf16_len(header)) if text.strip() else ["…"]
    rendered = [to_html(part) for part in parts]
    if speaker:
        rendered[0] = f"<b>{escape(speaker)}</b>\n{rendered[0]}"
    return rendered
