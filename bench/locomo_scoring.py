"""Scoring for the memory benchmark (:mod:`bench.memory_locomo`): evidence found word for word in
a memory block, what active records still store, and the contenders' orders (BM25, recency,
oracle) packed into the same budget by the engine's renderer."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.memory.bm25 import Bm25Index, weighted_query  # noqa: E402
from engine.memory.injection import (  # noqa: E402
    PREAMBLE,
    TokenCounter,
    render_block,
)
from engine.memory.records import MemoryRecord  # noqa: E402


def fold(text: str) -> str:
    """Whitespace folded to single spaces, for word-for-word comparison."""
    return " ".join(text.split())


def evidence_share(evidence: Sequence[str], block: str) -> float:
    """The share of ``evidence`` texts present word for word in ``block`` (0 for none)."""
    if not evidence:
        return 0.0
    haystack = fold(block)
    return sum(1 for text in evidence if fold(text) in haystack) / len(evidence)


def stored_share(observations: Sequence[str], records: Sequence[MemoryRecord]) -> float:
    """The share of ``observations`` present word for word in some record's text."""
    texts = [fold(r.display) for r in records]
    if not observations:
        return 0.0
    return sum(1 for o in observations if any(fold(o) in t for t in texts)) / len(observations)


def pack(
    ordered: Sequence[MemoryRecord],
    *,
    budget: int,
    count: TokenCounter,
    max_items: int,
    max_item_chars: int,
) -> str:
    """The block of ``ordered`` records taken greedily, each kept while the whole rendered
    block stays within ``budget`` tokens (the engine's renderer, item cap and line cut)."""
    chosen: list[MemoryRecord] = []
    for record in ordered:
        if len(chosen) >= max_items:
            break
        trial = [*chosen, record]
        if count(render_block(trial, max_item_chars=max_item_chars)) <= budget:
            chosen = trial
    return render_block(chosen, max_item_chars=max_item_chars)


def _newest_first(record: MemoryRecord) -> tuple[int, int, str]:
    end = record.coverage_end if record.coverage_end is not None else record.created_floor
    return (-end, -record.created_floor, record.id)


def bm25_order(records: Sequence[MemoryRecord], question: str) -> list[MemoryRecord]:
    """Plain BM25 of the question over the records' text, best first (ties: newest)."""
    index = Bm25Index.build({r.id: r.display for r in records})
    terms = weighted_query([(question, 1.0)])
    scores = {r.id: index.score(r.id, terms) for r in records}
    return sorted(records, key=lambda r: (-scores[r.id], *_newest_first(r)))


def recency_order(records: Sequence[MemoryRecord], question: str) -> list[MemoryRecord]:
    """Newest first, whatever the question."""
    return sorted(records, key=_newest_first)


def oracle_order(records: Sequence[MemoryRecord], evidence: Sequence[str]) -> list[MemoryRecord]:
    """Only the records holding evidence, those holding the most first (ties: shortest)."""
    held = {r.id: sum(1 for e in evidence if fold(e) in fold(r.display)) for r in records}
    holding = [r for r in records if held[r.id]]
    return sorted(holding, key=lambda r: (-held[r.id], len(r.display), r.id))


def memory_block(messages: Sequence[Mapping[str, Any]]) -> str:
    """The memory block of a prompt: from its preamble through its headers and items."""
    for message in messages:
        content = str(message.get("content") or "")
        if PREAMBLE not in content:
            continue
        lines = content[content.index(PREAMBLE) :].splitlines()
        kept = [lines[0]]
        for line in lines[1:]:
            if not (line.startswith("- ") or line.startswith("[")):
                break
            kept.append(line)
        return "\n".join(kept)
    return ""
