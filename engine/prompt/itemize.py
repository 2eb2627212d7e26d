"""A page's itemization: how its prompt was assembled, kept with the page so the prompt
inspector shows a past floor as it was, not as today's cards, books and memory would build it.

The itemization has the dry-run object's shape (``messages`` with their sources, ``world_info``
with the key that fired each entry, ``budget``, ``warnings``), so one view reads both, plus
each message's token count. It is compact: a chat-history message keeps its first
:data:`HISTORY_LINE_CHARS` characters (the whole line is on the timeline) and a world-info
entry its first :data:`WORLD_ENTRY_CHARS` (its whole text is in the message of its position).
It is bounded: once its JSON would pass
:data:`MAX_ITEMIZATION_CHARS`, the message and entry texts are cut (longest first, each keeping
its head and a marker) until it fits; the sources, keys and counts always stay.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from engine.prompt.budget import TokenCounter
from engine.prompt.ir import PromptIR
from engine.prompt.wi_output import WorldInfoResult

MAX_ITEMIZATION_CHARS: Final = 60_000
"""Largest itemization (its JSON, in characters) stored with one page."""
MIN_KEPT_CHARS: Final = 80
"""Characters of a cut text kept at least (its head), so a section stays recognisable."""
CUT_MARK: Final = " […]"
"""Appended to a text cut to fit the itemization."""
HISTORY_LINE_CHARS: Final = 400
"""Characters of a chat-history message an itemization keeps (the timeline has the rest)."""
WORLD_ENTRY_CHARS: Final = 300
"""Characters of a fired world-info entry's text kept beside its key (the prompt message of
its position holds it whole)."""
ITEMIZATION_VERSION: Final = 1
"""The itemization's format (``version``), for readers of older rows."""


def itemization_of(
    ir: PromptIR, world: WorldInfoResult, counter: TokenCounter | None = None
) -> dict[str, Any]:
    """The bounded itemization of an assembled prompt. Each message's tokens are what the
    assembly's budget charged it; ``counter`` counts those it left at 0 (else they are left
    out)."""
    messages = []
    for message in ir.messages:
        item = message.to_json()
        if message.tokens:
            item["tokens"] = message.tokens
        elif counter is not None:
            item["tokens"] = counter.count(message.content)
        sources = message.sources
        if sources and all(source.kind == "history" for source in sources):
            item["content"] = _head(message.content, HISTORY_LINE_CHARS)
        messages.append(item)
    entries = []
    for entry in world.activated:
        item = entry.to_json()
        item["content"] = _head(entry.content, WORLD_ENTRY_CHARS)
        entries.append(item)
    data: dict[str, Any] = {
        "version": ITEMIZATION_VERSION,
        "mode": ir.mode,
        "messages": messages,
        "world_info": entries,
        "budget": ir.budget.to_json(),
        "warnings": list(ir.warnings),
    }
    return bounded(data)


def _head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + CUT_MARK


def _size(data: Mapping[str, Any]) -> int:
    return len(json.dumps(data, ensure_ascii=False))


def bounded(data: dict[str, Any], limit: int = MAX_ITEMIZATION_CHARS) -> dict[str, Any]:
    """``data`` with its ``content`` texts cut until its JSON is at most ``limit`` characters
    (``truncated`` says it was cut); the structure is never dropped."""
    size = _size(data)
    if size <= limit:
        return data
    texts = [*data["messages"], *data["world_info"]]
    originals = [str(item["content"]) for item in texts]
    # Lower a common cap on every text until the whole fits: the longest texts lose most.
    cap = max((len(text) for text in originals), default=0)
    while size > limit and cap > MIN_KEPT_CHARS:
        cap = max(MIN_KEPT_CHARS, cap // 2)
        for item, original in zip(texts, originals, strict=True):
            if len(original) > cap:
                item["content"] = original[:cap] + CUT_MARK
        size = _size(data)
    data["truncated"] = True
    return data
