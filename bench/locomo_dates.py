"""Time-aware recall in the LoCoMo bench (issue 18): the sessions' dates fed as a role-play
gives them, and the temporal questions' figure.

With ``--dates`` the bench sets the chat variable ``date`` (the engine's default story-date
variable, :data:`engine.memory.story_dates.STORY_DATE_VARIABLE`) to the session's date, as
LoCoMo writes it (``1:56 pm on 8 May, 2023``), before the first floor of each session, the way
a game master's ``/setvar date ...`` would; the records each floor writes then carry it, and
the memory block shows it.

The temporal figure covers every question of category 2 (LoCoMo's temporal questions, "When
did ...?") whose evidence was played, not only the sample: the share of their evidence in the
block (as for the other questions) and the share whose gold answer (a date such as
``7 May 2023``, commas and case folded) appears in the block, which only a dated block can
hold.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from bench.locomo_data import Conversation, Floor, Question
from bench.locomo_scoring import evidence_share, fold
from engine.memory.story_dates import STORY_DATE_VARIABLE
from engine.turns.api import SessionKey
from engine.turns.service import TavernService

TEMPORAL_CATEGORY = 2
"""LoCoMo's category of temporal questions."""
# What the story-date rendering adds inside a unit: "[7 May 2023]", "[May 2023]", "[2023]".
_RESOLVED = re.compile(r" \[(?:\d{1,2} )?(?:[A-Z][a-z]+ )?\d{4}\]")
_LEADING_DATE = re.compile(r"(?m)^(- )?\([^)]*\) ")


def temporal_questions(conversation: Conversation) -> list[Question]:
    """Every played question of the temporal category."""
    return [q for q in conversation.questions if q.category == TEMPORAL_CATEGORY]


async def date_session(
    service: TavernService, key: SessionKey, branch: str, floor: Floor, previous: Floor | None
) -> None:
    """Set the story date when ``floor`` opens a new LoCoMo session."""
    if floor.session_date and (previous is None or previous.session != floor.session):
        await service.set_variable(key, branch, STORY_DATE_VARIABLE, floor.session_date)


def undated(block: str) -> str:
    """``block`` (or a record's text) without what the date rendering added (each line's
    leading date and the resolved relative days), so evidence is matched word for word as in
    an undated run."""
    return _RESOLVED.sub("", _LEADING_DATE.sub(r"\1", block))


def _answer_key(text: str) -> str:
    return fold(text.replace(",", " ")).casefold()


def answer_in_block(answer: str, block: str) -> bool:
    """Whether the gold answer appears in the block (commas, spacing and case folded)."""
    key = _answer_key(answer)
    return bool(key) and key in _answer_key(block)


@dataclass(frozen=True, slots=True)
class TemporalFigure:
    """The temporal questions' evidence share and answer share in the tavernbot block."""

    questions: int
    evidence: float
    answers: float

    def line(self, path: str, dates: bool) -> str:
        """One line of the report."""
        return (
            f"{path} temporal ({self.questions} category-2 questions, dates "
            f"{'on' if dates else 'off'}): evidence {self.evidence:.3f}, gold answer in the "
            f"block {self.answers:.3f}"
        )


def temporal_figure(
    conversation: Conversation, questions: Sequence[Question], blocks: Sequence[str]
) -> TemporalFigure:
    """The figure for ``questions`` (the temporal ones) and their tavernbot ``blocks``."""
    if not questions:
        return TemporalFigure(0, 0.0, 0.0)
    evidence = [
        evidence_share(conversation.evidence(q), undated(b))
        for q, b in zip(questions, blocks, strict=True)
    ]
    answers = [
        1.0 if answer_in_block(q.answer, b) else 0.0
        for q, b in zip(questions, blocks, strict=True)
    ]
    return TemporalFigure(len(questions), statistics.fmean(evidence), statistics.fmean(answers))
