"""Step-wise summarising for compaction: no summariser request is ever cut.

A compaction shows its summariser every source whole. When the sources together are longer
than one request may hold (``max_request_chars``), they are summarised in steps: consecutive
batches within the budget (a source longer than the budget split at sentence ends, then at
words, never dropped), each batch's answer standing for its floors; those answers are
condensed again in the next round while that makes them shorter, for at most ``max_rounds``
rounds, and what is left is joined in story order. A summariser that repeats what it is shown
therefore loses nothing, and a real one never sees half a source.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from engine.memory.plan import Diagnostic

MAX_COMPACTION_REQUEST_CHARS = 12_000
"""Source characters one summariser call is shown at most (about 3,000 tokens); a fold past
it is summarised in steps, never cut."""
MAX_COMPACTION_ROUNDS = 3
"""Rounds of step-wise summarising at most; past them the last round's answers are joined."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionRequest:
    """What the summariser is asked to condense (texts oldest first)."""

    tier: int
    texts: tuple[str, ...]
    coverage_start: int
    coverage_end: int


Summariser = Callable[[CompactionRequest], Awaitable[str]]
"""The model call (the memory slot) that writes the new summary; injected."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SourcePart:
    """A text to condense and the floors it covers."""

    text: str
    start: int
    end: int


_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def _pieces(part: SourcePart, limit: int) -> list[SourcePart]:
    """``part`` in pieces of at most ``limit`` characters, split at sentence ends or lines
    (then at words, then inside a word): the pieces hold every word, in order."""
    if len(part.text) <= limit:
        return [part]
    units: list[str] = []
    for sentence in _SENTENCE_END.split(part.text):
        if len(sentence) <= limit:
            units.append(sentence)
            continue
        for word in sentence.split():
            units.extend(word[i : i + limit] for i in range(0, len(word), limit))
    pieces: list[str] = []
    current = ""
    for unit in filter(None, (u.strip() for u in units)):
        joined = f"{current} {unit}" if current else unit
        if len(joined) <= limit:
            current = joined
        else:
            pieces.append(current)
            current = unit
    if current:
        pieces.append(current)
    return [SourcePart(text=text, start=part.start, end=part.end) for text in pieces]


def _batches(parts: Sequence[SourcePart], limit: int) -> list[list[SourcePart]]:
    """Consecutive batches of ``parts`` (split where one is longer than ``limit``), each
    within ``limit`` characters."""
    batches: list[list[SourcePart]] = []
    current: list[SourcePart] = []
    size = 0
    for part in parts:
        for piece in _pieces(part, limit):
            if current and size + len(piece.text) > limit:
                batches.append(current)
                current, size = [], 0
            current.append(piece)
            size += len(piece.text)
    if current:
        batches.append(current)
    return batches


async def summarise_in_steps(
    tier: int,
    parts: Sequence[SourcePart],
    summariser: Summariser,
    *,
    max_request_chars: int = MAX_COMPACTION_REQUEST_CHARS,
    max_rounds: int = MAX_COMPACTION_ROUNDS,
    notes: list[Diagnostic] | None = None,
) -> str:
    """The summary of ``parts`` (oldest first), no request showing more than
    ``max_request_chars`` source characters and none cut.

    Sources within the budget make one request. Past it, consecutive batches within the
    budget are summarised one by one, and their answers become the next round's sources while
    that makes them shorter, for at most ``max_rounds`` rounds; the answers left are joined,
    one per line. An empty answer stands for its batch joined (noted as ``empty_summary``).
    """
    current = list(parts)
    for round_no in range(1, max_rounds + 1):
        answers: list[SourcePart] = []
        for batch in _batches(current, max_request_chars):
            request = CompactionRequest(
                tier=tier,
                texts=tuple(p.text for p in batch),
                coverage_start=batch[0].start,
                coverage_end=batch[-1].end,
            )
            answer = (await summariser(request)).strip()
            if not answer:
                if notes is not None:
                    notes.append(
                        Diagnostic(
                            code="empty_summary",
                            message=(
                                f"summariser returned nothing for floors {request.coverage_start}"
                                f"-{request.coverage_end}; the sources were joined instead"
                            ),
                        )
                    )
                answer = " ".join(request.texts)
            answers.append(SourcePart(text=answer, start=batch[0].start, end=batch[-1].end))
        shrank = sum(len(a.text) for a in answers) < sum(len(p.text) for p in current)
        if len(answers) == 1 or not shrank or round_no == max_rounds:
            return "\n".join(a.text for a in answers)
        current = answers
    raise AssertionError("unreachable: the last round returns")  # pragma: no cover
