"""One turn's total budget for regex work.

Every regex call already has its own time limit (``REGEX_TIMEOUT_S`` per script per text,
``KEY_REGEX_TIMEOUT_S`` per world-info key per scan), but a turn makes many calls: every script
on every history message, every regex key on every scan pass. A :class:`RegexBudget` is created
once per turn (or per dry run) and handed to every script run and key test of that turn. Each
call gets ``min(its own limit, what remains)``; once nothing remains, the remaining scripts are
skipped (their text is left as it was) and the remaining regex keys do not match, and
:meth:`RegexBudget.warning` says so once, naming the limit, what was skipped and how much.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

TURN_REGEX_BUDGET_S: Final = 2.0
"""Wall-clock seconds of regex work (scripts and world-info regex keys together) one turn may
spend. Real presets and books spend milliseconds; a hostile set of backtracking patterns
would otherwise cost per-call limit x calls (minutes on a large book)."""

EXHAUSTED: Final = "regex budget exhausted"
"""How the budget's warning begins (callers that gather warnings step by step keep only the
last, whole-turn one)."""

MAX_NAMED_SKIPS: Final = 10
"""Most distinct skipped scripts or keys the warning names (the count covers all of them)."""

Clock = Callable[[], float]


class RegexBudget:
    """The regex time left in one turn. Thread-safe: the assembly runs in a worker thread, and a
    turn's steps may run in different threads one after the other."""

    def __init__(self, total_s: float = TURN_REGEX_BUDGET_S, *, clock: Clock = time.monotonic):
        self.total_s = total_s
        self._clock = clock
        self._spent = 0.0
        self._skipped = 0
        self._named: list[str] = []
        self._lock = threading.Lock()

    @property
    def remaining_s(self) -> float:
        """Seconds left (never negative)."""
        with self._lock:
            return max(0.0, self.total_s - self._spent)

    @property
    def exhausted(self) -> bool:
        """Whether nothing is left."""
        return self.remaining_s <= 0.0

    @property
    def skipped(self) -> int:
        """How many regex runs were skipped because the budget ran out."""
        with self._lock:
            return self._skipped

    def allowance(self, per_call_s: float) -> float:
        """The timeout for the next call: its own limit, or what remains when that is less
        (zero or less: do not run it)."""
        return min(per_call_s, self.remaining_s)

    def now(self) -> float:
        """The budget's clock, to time a call with :meth:`charge_since`."""
        return self._clock()

    def charge_since(self, started: float) -> None:
        """Count the time since ``started`` (from :meth:`now`) against the budget."""
        elapsed = max(0.0, self._clock() - started)
        with self._lock:
            self._spent += elapsed

    def skip(self, what: str) -> None:
        """Record that ``what`` (e.g. ``script 'x'``) did not run for want of budget."""
        with self._lock:
            self._skipped += 1
            if what not in self._named and len(self._named) < MAX_NAMED_SKIPS:
                self._named.append(what)

    def warning(self) -> str | None:
        """The one warning about this budget, or None when nothing was skipped."""
        with self._lock:
            if not self._skipped:
                return None
            named = ", ".join(self._named)
            distinct_more = "" if len(self._named) < MAX_NAMED_SKIPS else ", ..."
            count = self._skipped
        return (
            f"{EXHAUSTED}: this turn's regex work reached TURN_REGEX_BUDGET_S="
            f"{self.total_s}s, so {count} regex run{'s' if count != 1 else ''} "
            f"{'were' if count != 1 else 'was'} skipped ({named}{distinct_more}); skipped "
            "scripts left their text unchanged and skipped world-info keys did not match"
        )


def run_allowance(budget: RegexBudget | None, per_call_s: float) -> float:
    """The timeout a call gets: ``per_call_s`` without a budget, else the budget's allowance."""
    return per_call_s if budget is None else budget.allowance(per_call_s)
