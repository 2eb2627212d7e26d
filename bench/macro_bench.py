"""Macro engine speed against one ``re.sub`` pass, side by side in one run.

The template is the shared benchmark set's ``macro_template_20k.txt``, read where it is
(20.5 KB, 514 macros: names, variables, shorthand, if/else, reverse, random, pick, comments,
time, unknown macros, legacy markers, trim). Three timings are interleaved round by round, so
machine noise hits them alike:

- baseline: one ``re.sub(r"\\{\\{[^{}]*\\}\\}", f, text)`` pass with a trivial callback;
- warm: ``evaluate`` with the template already parsed and the pure memos filled, as when a
  preset is evaluated again in the same chat (a fresh context each time);
- cold: ``evaluate`` after clearing the template cache and the memoised pick, time and hash
  helpers, so the parse, the content hash and every pick are paid again.

Targets: warm median <= 15x the baseline, cold median <= 60x.

    python -m bench.macro_bench            # print the table
    python -m bench.macro_bench --write    # also record bench/results/macros.md
"""

from __future__ import annotations

import argparse
import gc
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from engine.macros import (
    DEFAULT_CACHE,
    MacroContext,
    builtins_core,
    default_registry,
    evaluate,
    randomness,
    timefmt,
)
from engine.macros.cache import parse_template

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT.parent / "shared" / "bench" / "macro_template_20k.txt"
RESULTS = ROOT / "bench" / "results" / "macros.md"
WARM_TARGET = 15.0
COLD_TARGET = 60.0
NOW = datetime(2025, 1, 1, 12, 0, tzinfo=UTC)
PATTERN = re.compile(r"\{\{[^{}]*\}\}")


def _context() -> MacroContext:
    return MacroContext(user="Alice", char="Bob", now=NOW, chat_id="bench-chat")


def _clear_caches() -> None:
    DEFAULT_CACHE.clear()
    randomness.pick_fraction.cache_clear()
    timefmt._format_cached.cache_clear()
    timefmt.zone.cache_clear()
    builtins_core._chat_id_hash.cache_clear()


def measure(rounds: int) -> dict[str, list[float]]:
    """Seconds per call for each contender, ``rounds`` interleaved samples each: wall time
    under ``name`` and this thread's CPU time under ``name:cpu``."""
    text = TEMPLATE.read_text(encoding="utf-8")

    def baseline() -> None:
        PATTERN.sub(lambda m: "x", text)

    def warm() -> None:
        evaluate(text, _context())

    def cold() -> None:
        _clear_caches()
        evaluate(text, _context())

    registry = default_registry()

    def parse_only() -> None:
        parse_template(text, registry)

    def hash_only() -> None:
        randomness.string_hash(text)

    contenders: dict[str, Callable[[], None]] = {
        "baseline": baseline,
        "cold": cold,
        "warm": warm,
        "parse": parse_only,
        "hash": hash_only,
    }
    for run in contenders.values():  # warm-up: imports, first parse
        run()
    samples: dict[str, list[float]] = {}
    for name in contenders:
        samples[name] = []
        samples[name + ":cpu"] = []
    gc_was_enabled = gc.isenabled()
    try:
        for _ in range(rounds):
            for name, run in contenders.items():
                if name == "warm":
                    warm()  # untimed: the cold round emptied the memos; refill them
                gc.collect()
                cpu = time.thread_time()
                start = time.perf_counter()
                run()
                samples[name].append(time.perf_counter() - start)
                samples[name + ":cpu"].append(time.thread_time() - cpu)
    finally:
        if gc_was_enabled:
            gc.enable()
    return samples


def report(samples: dict[str, list[float]], rounds: int) -> str:
    """The results as a Markdown page."""
    med = {name: statistics.median(values) for name, values in samples.items()}
    base, warm, cold = med["baseline"], med["warm"], med["cold"]
    cbase, cwarm, ccold = med["baseline:cpu"], med["warm:cpu"], med["cold:cpu"]
    warm_ratio = cwarm / cbase
    cold_ratio = ccold / cbase
    text = TEMPLATE.read_text(encoding="utf-8")
    result = evaluate(text, _context())
    lines = [
        "# Macro engine vs one regex pass",
        "",
        "`python -m bench.macro_bench --write`: the 20.5 KB benchmark template "
        f"({len(PATTERN.findall(text))} macro-shaped matches, {result.steps} evaluation steps). "
        f"Median of {rounds} rounds; in each round every contender (the three below, plus "
        "parse-only and hash-only probes) runs back to back after a `gc.collect()`, so machine "
        "noise hits them alike.",
        "",
        "| contender | CPU ms | x baseline (CPU) | wall ms | x baseline (wall) | target |",
        "|---|---:|---:|---:|---:|---:|",
        f"| `re.sub` pass, trivial callback | {cbase * 1e3:.3f} | 1.0 | {base * 1e3:.3f} | 1.0 "
        "| |",
        f"| warm `evaluate` (template parsed) | {cwarm * 1e3:.3f} | {warm_ratio:.1f} | "
        f"{warm * 1e3:.3f} | {warm / base:.1f} | "
        f"<= {WARM_TARGET:.0f}x: {'PASS' if warm_ratio <= WARM_TARGET else 'FAIL'} |",
        f"| cold `evaluate` (parse, hash, picks) | {ccold * 1e3:.3f} | {cold_ratio:.1f} | "
        f"{cold * 1e3:.3f} | {cold / base:.1f} | "
        f"<= {COLD_TARGET:.0f}x: {'PASS' if cold_ratio <= COLD_TARGET else 'FAIL'} |",
        "",
        "Where the cold time goes (CPU, same run): parsing alone "
        f"{med['parse:cpu'] * 1e3:.3f} ms ({med['parse:cpu'] / cbase:.1f}x); the content hash "
        f"{{{{pick}}}} seeds from (cyrb53 over the whole text, as SillyTavern does; a "
        f"sequential 32-bit multiply chain that pure Python cannot vectorise) "
        f"{med['hash:cpu'] * 1e3:.3f} ms ({med['hash:cpu'] / cbase:.1f}x); the rest is the "
        "first evaluation, whose 21 picks each key a fresh ARC4 generator.",
        "",
        "The verdict uses CPU time (`time.thread_time`): the benchmark machine is shared, and "
        "under load a long call is far more likely to be pre-empted than a 0.1 ms one, which "
        "inflates wall-time ratios. Wall times are shown for reference.",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, {platform.system()}.",
        "",
        "What keeps it fast: one compiled regex finds every `{{`, `}}`, `::` and `|` (and whole "
        "brace-free macros) in a single scan and a second anchored pattern reads each macro "
        "head; brace-free arguments stay plain strings; the parser keeps a stack "
        "instead of backtracking and pairs scoped blocks by name in linear time; nodes are "
        "slotted objects and text is kept as plain `str` items; parsed templates are cached "
        "by text and registry generation; plain-text arguments cost nothing to evaluate; "
        "`{{pick}}`'s seeded generator and time formatting are memoised (both are pure); the "
        "content hash `{{pick}}` needs is computed once per template, on first use.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; ``--write`` records the result page."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--write", action="store_true", help="record bench/results/macros.md")
    args = parser.parse_args(argv)
    samples = measure(args.rounds)
    page = report(samples, args.rounds)
    print(page)
    if args.write:
        RESULTS.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
