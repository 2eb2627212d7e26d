"""Telegram's HTML parse mode as the Bot API checks it, for the loopback fake.

The real server refuses text it cannot parse with ``400 Bad Request: can't parse entities: ...``
and measures the 4096 limit on the visible text (tags removed, entities decoded) in UTF-16 code
units. :func:`visible_text` does both checks so the fake rejects what Telegram rejects.
"""

from __future__ import annotations

import html
import re

MAX_TEXT_UTF16 = 4096
"""Telegram's limit for one message's visible text, in UTF-16 code units."""

ALLOWED_TAGS = frozenset(
    {
        "b",
        "strong",
        "i",
        "em",
        "u",
        "ins",
        "s",
        "strike",
        "del",
        "span",
        "tg-spoiler",
        "a",
        "code",
        "pre",
        "blockquote",
        "tg-emoji",
    }
)
_TAG = re.compile(r"<(/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s+[^<>]*)?)\s*>")
_ENTITY = re.compile(r"&(lt|gt|amp|quot|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});")


class HtmlParseError(ValueError):
    """The text is not valid Telegram HTML; ``str()`` follows the Bot API wording."""


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units, as Telegram counts."""
    return len(text.encode("utf-16-le")) // 2


def visible_text(markup: str) -> str:
    """Parse ``markup`` as Telegram HTML and return the visible text, or raise HtmlParseError."""
    out: list[str] = []
    stack: list[str] = []
    pos = 0
    while pos < len(markup):
        char = markup[pos]
        if char == "<":
            match = _TAG.match(markup, pos)
            offset = len(markup[:pos].encode())
            if match is None:
                raise HtmlParseError(f"Unsupported start tag at byte offset {offset}")
            closing, name = match.group(1) == "/", match.group(2).lower()
            if name not in ALLOWED_TAGS:
                raise HtmlParseError(f'Unsupported start tag "{name}" at byte offset {offset}')
            if closing:
                if not stack or stack[-1] != name:
                    expected = f'"</{stack[-1]}>"' if stack else "no end tag"
                    raise HtmlParseError(
                        f"Unmatched end tag at byte offset {offset}, expected {expected}, "
                        f'found "</{name}>"'
                    )
                stack.pop()
            else:
                stack.append(name)
            pos = match.end()
        elif char == "&":
            match = _ENTITY.match(markup, pos)
            if match is None:
                offset = len(markup[:pos].encode())
                raise HtmlParseError(f"Character entity expected at byte offset {offset}")
            out.append(html.unescape(match.group(0)))
            pos = match.end()
        elif char == ">":
            offset = len(markup[:pos].encode())
            raise HtmlParseError(f'Unexpected ">" at byte offset {offset}')
        else:
            out.append(char)
            pos += 1
    if stack:
        raise HtmlParseError(f'Can\'t find end tag corresponding to start tag "{stack[-1]}"')
    return "".join(out)
