"""Macro blocks nested thousands of levels deep: time and memory per evaluation, and how they
grow with the depth (issue 12: 8,000 nested ``{{if}}`` took 113 s and 1.4 GB).

Each document is ``opener * n + "x" + closer * n`` (128 KB of text at 8,000 ``{{if::1}}``
levels). Every evaluation starts from an empty template cache, so the parse is included.
Time is the median of ``--rounds`` runs (CPU time of this thread, wall time for reference);
memory is the ``tracemalloc`` peak of one more run (tracing slows Python, so it is measured
apart). The verdict is the growth: 8x the depth should cost about 8x, and 8,000 levels
should stay well under 0.5 s and 50 MB.

    python -m bench.macro_nesting_bench                  # print the table
    python -m bench.macro_nesting_bench --write          # also record the results page
    python -m bench.macro_nesting_bench --depths 1000    # a quick look (e.g. on older code)
"""

from __future__ import annotations

import argparse
import gc
import platform
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from engine.macros import MacroContext, evaluate
from engine.macros.cache import DEFAULT_CACHE, TemplateCache

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "macro_nesting.md"
TIME_TARGET_S = 0.5
MEMORY_TARGET_MB = 50.0
TARGET_DEPTH = 8_000


def _wrap(opener: str, closer: str) -> Callable[[int], str]:
    return lambda n: opener * n + "x" + closer * n


FORMS: dict[str, Callable[[int], str]] = {
    "`{{if::1}}` inline": _wrap("{{if::1}}", "{{/if}}"),
    "`{{if 1}}` block": _wrap("{{if 1}}", "{{/if}}"),
    "`{{if 1}}` with `{{else}}`": _wrap("{{if 1}}", "{{else}}y{{/if}}"),
    "`{{if 1}}` indented lines": _wrap("{{if 1}}\n  ", "\n{{/if}}"),
    "`{{trim}}`": _wrap("{{trim}}", "{{/trim}}"),
    "`{{if 1}}{{trim}}`": _wrap("{{if 1}}{{trim}}", "{{/trim}}{{/if}}"),
    "unknown `{{foo}}`": _wrap("{{foo}}", "{{/foo}}"),
}


def _run(text: str) -> None:
    DEFAULT_CACHE.clear()  # older code swapped an empty cache for the default one
    evaluate(text, MacroContext(user="Alice", char="Bob"), cache=TemplateCache())


def measure(depths: list[int], rounds: int) -> list[dict[str, object]]:
    """One row per form and depth: text size, median CPU and wall seconds, peak MB."""
    rows: list[dict[str, object]] = []
    for name, build in FORMS.items():
        for depth in depths:
            text = build(depth)
            cpu: list[float] = []
            wall: list[float] = []
            for _ in range(rounds):
                gc.collect()
                c0, w0 = time.thread_time(), time.perf_counter()
                _run(text)
                cpu.append(time.thread_time() - c0)
                wall.append(time.perf_counter() - w0)
            gc.collect()
            tracemalloc.start()
            _run(text)
            peak = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
            rows.append(
                {
                    "form": name,
                    "depth": depth,
                    "kb": len(text) / 1000,
                    "cpu": statistics.median(cpu),
                    "wall": statistics.median(wall),
                    "mb": peak,
                }
            )
            print(f"{name} {depth}: {rows[-1]['cpu']:.3f} s CPU, {peak:.1f} MB", file=sys.stderr)
    return rows


def report(rows: list[dict[str, object]], rounds: int) -> str:
    """The results as a Markdown page."""
    lines = [
        "# Deeply nested macro blocks",
        "",
        "`python -m bench.macro_nesting_bench --write`: each document is "
        '`opener * n + "x" + closer * n`, evaluated from an empty template cache (parse '
        f"included). CPU and wall time: median of {rounds} runs; memory: `tracemalloc` peak of "
        "one more run. Growth compares each depth with the smallest one measured.",
        "",
        "| form | levels | text KB | CPU s | wall s | peak MB | growth (time, memory) vs depth |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    verdicts: list[bool] = []
    first: dict[str, dict[str, object]] = {}
    for row in rows:
        form = str(row["form"])
        base = first.setdefault(form, row)
        depth = int(row["depth"])  # type: ignore[call-overload]
        cpu, wall, mb = float(row["cpu"]), float(row["wall"]), float(row["mb"])  # type: ignore[arg-type]
        base_depth = int(base["depth"])  # type: ignore[call-overload]
        growth = ""
        if depth != base_depth:
            growth = (
                f"{cpu / max(float(base['cpu']), 1e-9):.1f}x, "  # type: ignore[arg-type]
                f"{mb / max(float(base['mb']), 1e-9):.1f}x "  # type: ignore[arg-type]
                f"for {depth / base_depth:.0f}x"
            )
        if depth == TARGET_DEPTH:
            verdicts.append(cpu <= TIME_TARGET_S and mb <= MEMORY_TARGET_MB)
        lines.append(
            f"| {form} | {depth:,} | {row['kb']:.0f} | {cpu:.3f} | {wall:.3f} | {mb:.1f} | "
            f"{growth} |"
        )
    if verdicts:
        met = "met" if all(verdicts) else "NOT met"
        lines += [
            "",
            f"Target at {TARGET_DEPTH:,} levels: <= {TIME_TARGET_S} s CPU and <= "
            f"{MEMORY_TARGET_MB:.0f} MB for every form: **{met}**.",
        ]
    lines += [
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, {platform.system()}.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; ``--write`` records the result page."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--depths", type=int, nargs="+", default=[1_000, 8_000, 20_000])
    parser.add_argument("--write", action="store_true", help="record the result page")
    args = parser.parse_args(argv)
    rows = measure(args.depths, args.rounds)
    page = report(rows, args.rounds)
    print(page)
    if args.write:
        RESULTS.write_text(page, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
