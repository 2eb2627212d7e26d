"""Extraction of ``<summary>``-style tags from the narrator's raw output.

Runs on the raw assistant text before the regex scripts (the caller orders that), and only on
assistant output: a ``<summary>`` typed by a user never creates a memory. The visible text is
the reply without the tag blocks; every non-empty block becomes an :class:`ExtractedItem`.

Tags are matched case-insensitively and across lines, without attributes (``<summary x=1>`` is
prose, not a tag). A block ends at the close tag that balances its open tag, so a nested block
of the same name stays inside its parent; tags of other configured names inside a block are
removed from the item text. An unclosed block (a reply cut off by the token limit) runs to the
end of the text; a close tag with no open tag is dropped from the visible text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.memory.errors import MemoryPolicyError

DEFAULT_SUMMARY_TAGS: tuple[str, ...] = ("summary", "摘要", "memory", "记忆", "memo")
MAX_TAG_NAMES = 16
MAX_TAG_NAME_CHARS = 32
MAX_EXTRACTED_ITEM_CHARS = 2000
MAX_EXTRACTED_ITEMS = 16
_VALID_TAG = re.compile(r"[^\s<>/\"'=]+")
_BLANK_RUNS = re.compile(r"\n{3,}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtractedItem:
    """The text of one tag block (trimmed); ``complete`` is False for an unclosed block."""

    tag: str
    text: str
    complete: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtractionResult:
    """What the user sees, what was extracted, and notes about malformed tags."""

    visible_text: str
    items: tuple[ExtractedItem, ...] = ()
    diagnostics: tuple[str, ...] = ()


def validate_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """Check a preset's tag list; raises :class:`MemoryPolicyError` naming the bad entry."""
    if len(tags) > MAX_TAG_NAMES:
        raise MemoryPolicyError(f"summary tags: {len(tags)} names, at most {MAX_TAG_NAMES}")
    cleaned: list[str] = []
    for tag in tags:
        name = tag.strip()
        if not name or len(name) > MAX_TAG_NAME_CHARS or not _VALID_TAG.fullmatch(name):
            raise MemoryPolicyError(f"summary tags: {tag!r} is not a usable tag name")
        if name.lower() not in (c.lower() for c in cleaned):
            cleaned.append(name)
    return tuple(cleaned)


def _tag_pattern(tags: Sequence[str]) -> re.Pattern[str]:
    names = "|".join(re.escape(t) for t in sorted(tags, key=len, reverse=True))
    return re.compile(rf"<(/?)({names})>", re.IGNORECASE)


def extract_memory_tags(
    raw: str, *, role: str, tags: Sequence[str] = DEFAULT_SUMMARY_TAGS
) -> ExtractionResult:
    """Split raw model output into the visible reply and the memory-tag blocks.

    ``role`` is the message's role; anything but ``"assistant"`` comes back untouched.
    """
    if role != "assistant" or not raw:
        return ExtractionResult(visible_text=raw)
    names = validate_tags(tags)
    if not names:
        return ExtractionResult(visible_text=raw)
    pattern = _tag_pattern(names)
    if pattern.search(raw) is None:
        return ExtractionResult(visible_text=raw)
    visible: list[str] = []
    items: list[ExtractedItem] = []
    notes: list[str] = []
    cursor = 0  # start of text not yet copied to ``visible``
    block_tag: str | None = None
    block_start = 0
    depth = 0
    for match in pattern.finditer(raw):
        closing, name = match.group(1) == "/", match.group(2).lower()
        if block_tag is None:
            visible.append(raw[cursor : match.start()])
            cursor = match.end()
            if closing:
                notes.append(f"stray closing tag </{match.group(2)}> at {match.start()} dropped")
                continue
            block_tag, block_start, depth = name, match.end(), 1
            continue
        if name != block_tag:
            continue
        depth += -1 if closing else 1
        if depth == 0:
            _add_item(items, notes, block_tag, raw[block_start : match.start()], pattern, True)
            block_tag = None
            cursor = match.end()
    if block_tag is not None:
        notes.append(f"unclosed <{block_tag}> block at {block_start} runs to the end")
        _add_item(items, notes, block_tag, raw[block_start:], pattern, False)
        cursor = len(raw)
    visible.append(raw[cursor:])
    joined = "".join(visible)
    # Cutting blocks out can splice a new tag together ("<summ" + "ary>"); drop those too.
    # Each pass shortens the text, so this ends.
    while pattern.search(joined):
        joined = pattern.sub("", joined)
    text = _BLANK_RUNS.sub("\n\n", joined).strip()
    return ExtractionResult(visible_text=text, items=tuple(items), diagnostics=tuple(notes))


def _add_item(
    items: list[ExtractedItem],
    notes: list[str],
    tag: str,
    body: str,
    pattern: re.Pattern[str],
    complete: bool,
) -> None:
    text = pattern.sub("", body).strip()
    if not text:
        return
    if len(items) >= MAX_EXTRACTED_ITEMS:
        notes.append(f"more than {MAX_EXTRACTED_ITEMS} memory blocks; the rest dropped")
        return
    if len(text) > MAX_EXTRACTED_ITEM_CHARS:
        notes.append(f"<{tag}> block cut to {MAX_EXTRACTED_ITEM_CHARS} characters")
        text = text[:MAX_EXTRACTED_ITEM_CHARS].rstrip()
    items.append(ExtractedItem(tag=tag, text=text, complete=complete))
