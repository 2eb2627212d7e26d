"""Named bounds on one evaluation, so hostile text can never stall the bot.

Every bound has a name. The defaults sit far above anything a real preset, card or world book
reaches (the 20 KB benchmark template uses about 600 steps and depth 3) and far below what
would take a noticeable time to exhaust.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: Default nesting depth of evaluated documents (arguments, branches, card fields).
DEFAULT_MAX_DEPTH = 48
#: Default number of evaluation steps (one per macro and one per nested document).
DEFAULT_MAX_STEPS = 200_000
#: Default length of any produced text (a macro result, a branch, the whole output).
DEFAULT_MAX_OUTPUT_CHARS = 2_000_000
#: Default number of variable writes one evaluation may record.
DEFAULT_MAX_MUTATIONS = 10_000
#: Evaluation steps all the texts of one prompt assembly (a turn, a dry run) may use together:
#: each evaluation gets at most what is left, and once it is spent the later texts are kept
#: as written with one warning. 2.5 times one evaluation's default: a real turn uses a few
#: thousand, and half a million steps take well under a second.
TURN_MACRO_STEPS: Final = 500_000

#: The depth is clamped to this so deep nesting cannot exhaust the Python stack.
HARD_MAX_DEPTH = 96
#: Macros nested deeper than this inside one another are parsed as plain text.
PARSE_NESTING_LIMIT = 96
#: Scoped blocks nested deeper than this are left unpaired (and reported). Pairing itself is
#: linear in the text however deep blocks nest; contents are paired only when evaluated.
PAIRING_NESTING_LIMIT = 96
#: Produced text costs one extra step per this many characters (bounds total copying work).
CHARS_PER_STEP = 4096
#: Evaluation stops once large produced texts add up to this many times ``max_output_chars``.
OUTPUT_WORK_FACTOR = 4
#: At most this many warnings are kept per evaluation; later ones are counted only.
MAX_WARNINGS = 1_000
#: At most this many traces are kept per evaluation.
MAX_TRACES = 10_000


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Bounds on one ``evaluate`` call; past ``max_mutations`` a write is refused, not applied."""

    max_depth: int = DEFAULT_MAX_DEPTH
    max_steps: int = DEFAULT_MAX_STEPS
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    max_mutations: int = DEFAULT_MAX_MUTATIONS

    def clamped(self) -> Limits:
        """The same limits, forced into the range the engine can honour safely."""
        return Limits(
            max_depth=max(0, min(self.max_depth, HARD_MAX_DEPTH)),
            max_steps=max(0, self.max_steps),
            max_output_chars=max(0, self.max_output_chars),
            max_mutations=max(0, self.max_mutations),
        )


DEFAULT_LIMITS = Limits()
