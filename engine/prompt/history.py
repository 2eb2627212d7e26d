"""The chat as assembly reads it: pulled lazily, newest first, each message regex-processed once.

World info scans the first few messages; the history fill keeps pulling until the budget is
full. Nothing older than that is ever read, so a 10,000-floor chat costs what its window costs.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Sequence

from engine.prompt.inputs import (
    PLACEMENT_AI_OUTPUT,
    PLACEMENT_USER_INPUT,
    HistoryLine,
    HistorySource,
    PromptRegex,
)

_NAME_CHARS = re.compile(r"[^A-Za-z0-9_]")
MAX_NAME_LENGTH = 64


def sanitize_name(name: str) -> str:
    """A speaker name as the OpenAI ``name`` field allows: ``[A-Za-z0-9_]{1,64}``."""
    return _NAME_CHARS.sub("_", name)[:MAX_NAME_LENGTH]


class HistoryCursor:
    """Newest-first access to the chat (the new input first, if any), pulled on demand."""

    def __init__(
        self,
        history: HistorySource,
        *,
        user_input: HistoryLine | None,
        regex: PromptRegex,
    ) -> None:
        head: list[HistoryLine] = [user_input] if user_input is not None else []
        self._source: Iterator[HistoryLine] = itertools.chain(head, history.newest_first())
        self._lines: list[HistoryLine] = []
        self._regex = regex
        self._done = False
        self.length = history.length + len(head)

    @property
    def pulled(self) -> int:
        """How many messages have been read so far."""
        return len(self._lines)

    def get(self, index: int) -> HistoryLine | None:
        """The ``index``-th newest message (0 = newest), or ``None`` past the oldest."""
        while len(self._lines) <= index and not self._done:
            line = next(self._source, None)
            if line is None:
                self._done = True
                break
            depth = len(self._lines)
            placement = PLACEMENT_USER_INPUT if line.is_user else PLACEMENT_AI_OUTPUT
            text = self._regex(line.text.replace("\r", ""), placement=placement, depth=depth)
            self._lines.append(
                HistoryLine(
                    text=text,
                    is_user=line.is_user,
                    name=line.name,
                    floor=line.floor,
                    role=line.role,
                    force_avatar=line.force_avatar,
                )
            )
        return self._lines[index] if index < len(self._lines) else None


class CursorWindow:
    """The world info scan window over a :class:`HistoryCursor` (``"Name: text"`` lines when
    names are included)."""

    def __init__(self, cursor: HistoryCursor, *, include_names: bool) -> None:
        self._cursor = cursor
        self._include_names = include_names

    @property
    def length(self) -> int:
        """Messages in the chat."""
        return self._cursor.length

    def newest(self, count: int) -> Sequence[str]:
        """Up to ``count`` newest messages."""
        out: list[str] = []
        for index in range(count):
            line = self._cursor.get(index)
            if line is None:
                break
            out.append(f"{line.name}: {line.text}" if self._include_names else line.text)
        return out
