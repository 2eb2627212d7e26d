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
        self._scripts = 0
        self._keys = 0
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
            return self._scripts + self._keys

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

    def skip_script(self, name: str) -> None:
        """Record that the script ``name`` did not run (or was cut short) for want of budget."""
        with self._lock:
            self._scripts += 1
            self._name(f"script {name!r}")

    def skip_key(self, key: str) -> None:
        """Record that the world-info regex key ``key`` was not tested for want of budget."""
        with self._lock:
            self._keys += 1
            self._name(f"world-info key {key}")

    def _name(self, what: str) -> None:
        if what not in self._named and len(self._named) < MAX_NAMED_SKIPS:
            self._named.append(what)

    def warning(self) -> str | None:
        """The one warning about this budget, or None when nothing was skipped."""
        with self._lock:
            scripts, keys = self._scripts, self._keys
            named = ", ".join(self._named)
            more = "" if len(self._named) < MAX_NAMED_SKIPS else ", ..."
        if not scripts and not keys:
            return None
        counts = []
        if scripts:
            counts.append(f"{scripts} script run{'s' if scripts != 1 else ''}")
        if keys:
            counts.append(f"{keys} world-info key test{'s' if keys != 1 else ''}")
        return (
            f"{EXHAUSTED}: this turn's regex work reached TURN_REGEX_BUDGET_S={self.total_s}s, "
            f"so {' and '.join(counts)} {'was' if scripts + keys == 1 else 'were'} skipped "
            f"({named}{more}); skipped scripts left their text unchanged and skipped "
            "world-info keys did not match"
        )


def run_allowance(budget: RegexBudget | None, per_call_s: float) -> float:
    """The timeout a call gets: ``per_call_s`` without a budget, else the budget's allowance."""
    return per_call_s if budget is None else budget.allowance(per_call_s)
