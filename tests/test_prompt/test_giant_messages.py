"""Issue 12: a giant message in the history is trimmed, never a reason for the prompt to fail.

The history is filled from the newest message back until the budget is full: a message that
cannot fit ends the history there (SillyTavern's rule), and a message older than what fits is
never even read or counted, so a giant old message costs nothing once trimmed.
"""

from __future__ import annotations

from collections.abc import Iterator

from engine.prompt.assemble import assemble
from engine.prompt.inputs import AssemblyInput, CharacterFields, HistoryLine
from engine.prompt.tokens import counter_for_model
from tests.test_prompt.helpers import chat, preset

HISTORY_ONLY = preset([{"identifier": "chatHistory", "marker": True}], ["chatHistory"])
GIANT = "word " * 400_000  # two million characters


class SpyCounter:
    """The real counter for a model, remembering the length of every text it counted."""

    def __init__(self) -> None:
        self.real = counter_for_model("gpt-4o")
        self.lengths: list[int] = []

    def count(self, text: str) -> int:
        self.lengths.append(len(text))
        return self.real.count(text)


def _assemble(history: object, counter: object) -> object:
    return assemble(
        AssemblyInput(
            preset=HISTORY_ONLY,
            character=CharacterFields(name="Sera"),
            user_name="Ann",
            history=history,  # type: ignore[arg-type]
            max_context=2000,
            max_tokens=100,
        ),
        tokens=counter,  # type: ignore[arg-type]
    )


def test_a_giant_recent_message_is_trimmed_and_the_prompt_is_built() -> None:
    result = _assemble(chat("old hello", GIANT, "how are you?"), counter_for_model("gpt-4o"))
    texts = [m.content for m in result.ir.messages]  # type: ignore[attr-defined]
    assert texts[-1] == "how are you?"
    assert all(len(t) < 100 for t in texts)
    assert result.ir.budget.history_truncated  # type: ignore[attr-defined]


class GiantFirst:
    """A long chat whose oldest message is giant; records which messages were read."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.read = 0

    @property
    def length(self) -> int:
        return self.size

    @property
    def user_messages(self) -> int:
        return self.size // 2

    def newest_first(self) -> Iterator[HistoryLine]:
        for i in range(self.size - 1, -1, -1):
            self.read += 1
            text = GIANT if i == 0 else f"message number {i} " * 3
            yield HistoryLine(text=text, is_user=i % 2 == 0, name="X", floor=i + 1)


def test_a_giant_old_message_past_the_budget_is_never_read_or_counted() -> None:
    history = GiantFirst(5_000)
    spy = SpyCounter()
    result = _assemble(history, spy)
    assert result.ir.budget.history_truncated  # type: ignore[attr-defined]
    assert history.read < 500
    assert max(spy.lengths) < 1_000
