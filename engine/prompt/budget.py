"""Token accounting for assembly: what a message costs and how much room is left.

The budget is SillyTavern's: context − response − reply priming, and a message costs its content
and role tokens plus a fixed per-message overhead (plus the name and one more when named).
Empty messages are dropped from the prompt, so they cost nothing.
"""

from __future__ import annotations

from typing import Protocol

# OpenAI chat format overheads (the same numbers SillyTavern's token counter uses).
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING_TOKENS = 3


class TokenCounter(Protocol):
    """Counts tokens of plain text for the session's model: the one counter shape the
    assembler, the budget and :mod:`engine.prompt.tokens` share (that module's counters also
    say which tokenizer they use in ``name``)."""

    def count(self, text: str) -> int:
        """The number of tokens in ``text``."""
        ...


class EstimateCounter:
    """A model-agnostic estimate: one token per four characters, rounded up. Used when no
    real tokenizer is wired in (tests, unknown models)."""

    def count(self, text: str) -> int:
        """``ceil(len(text) / 4)``."""
        return (len(text) + 3) // 4


class Budget:
    """The remaining room while messages are added; caches the role-token costs."""

    def __init__(self, counter: TokenCounter, available: int) -> None:
        self.counter = counter
        self.available = available
        self.used = 0
        self._fixed: dict[str, int] = {}

    def _small(self, text: str) -> int:
        cost = self._fixed.get(text)
        if cost is None:
            cost = self.counter.count(text)
            self._fixed[text] = cost
        return cost

    def cost(self, role: str, content: str, name: str | None = None) -> int:
        """What one message costs in the prompt."""
        if not content:
            return 0
        total = self.counter.count(content) + self._small(role) + TOKENS_PER_MESSAGE
        if name:
            total += self._small(name) + TOKENS_PER_NAME
        return total

    @property
    def left(self) -> int:
        """Tokens still free."""
        return self.available - self.used

    def can_afford(self, cost: int) -> bool:
        """Whether ``cost`` more tokens fit."""
        return self.used + cost <= self.available

    def spend(self, cost: int) -> None:
        """Take ``cost`` tokens (fixed prompts are taken even when they overflow)."""
        self.used += cost
