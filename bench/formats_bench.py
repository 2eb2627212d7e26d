"""Speed of the SillyTavern format code: regex scripts, chat import/export, token counts.

Three measurements, each the median of several rounds:

- regex: 100 regex scripts (six shapes seen in real collections, global and not, with
  captures and trimStrings) over a 12 KB reply, against one plain ``re.sub`` per script with
  the same Python-native pattern and a template replacement: the price of JS fidelity (ASCII
  classes, JS stepping after empty matches, ST's replacement callback, the timeout);
- chat: import and export of a 10,000-message ST 1.15 chat with swipes (about 7 MB);
- tokens: exact o200k counts of the same 12 KB reply, and the estimator for other models.

Target: regex median <= 4x the baseline.

    python -m bench.formats_bench            # print the table
    python -m bench.formats_bench --write    # also record bench/results/formats.md
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from engine.formats.regex_scripts import parse_regex_script
from engine.formats.st_chat import chat_to_jsonl, parse_chat
from engine.prompt.regex_run import apply_scripts
from engine.prompt.tokens import counter_for_model

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "formats.md"
REGEX_TARGET = 4.0
ROUNDS = 7

# (JS findRegex, equivalent Python pattern, replaceString, Python template)
SHAPES = [
    (r"/\bfoo\b/gi", r"(?i)\bfoo\b", "bar", "bar"),
    (r"/(\w+)@(\w+)/g", r"(\w+)@(\w+)", "$2 at $1", r"\2 at \1"),
    (r"/\*([^*]+)\*/g", r"\*([^*]+)\*", "<i>$1</i>", r"<i>\1</i>"),
    (r"/<think>[\s\S]*?<\/think>/gi", r"(?i)<think>[\s\S]*?</think>", "", ""),
    (r"/^\s+|\s+$/g", r"^\s+|\s+$", "", ""),
    (r"/(sky)/", r"(sky)", "[{{match}}]", r"[\1]"),
]
REPLY = "The *sky* is blue, said foo to bar@baz. <think>hmm</think> " * 200


def _median(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _regex() -> tuple[float, float]:
    scripts = []
    natives = []
    for i in range(100):
        js, native, replace, template = SHAPES[i % len(SHAPES)]
        scripts.append(
            parse_regex_script(
                {"scriptName": f"s{i}", "findRegex": js, "replaceString": replace,
                 "trimStrings": ["zz"], "placement": [2]},
                source="bench",
            )
        )  # fmt: skip
        flags = js.rsplit("/", 1)[1]
        natives.append((re.compile(native), template, 0 if "g" in flags else 1))

    def ours() -> None:
        apply_scripts(REPLY, scripts, placement=2, channel="store")

    def baseline() -> None:
        text = REPLY
        for pattern, template, count in natives:
            text = pattern.sub(template, text, count=count)

    ours()  # compile and cache once, as a running bot would have
    return _median(ours), _median(baseline)


def _chat_text() -> str:
    lines = [json.dumps({"chat_metadata": {"integrity": "x"}, "user_name": "unused",
                         "character_name": "unused"})]  # fmt: skip
    for i in range(10_000):
        text = f"Message {i}: " + "words and more words " * 12
        line: dict[str, object] = {
            "name": "User" if i % 2 else "Seraphina",
            "is_user": bool(i % 2),
            "is_system": False,
            "send_date": "2026-01-13T10:00:00.000Z",
            "mes": text,
            "extra": {"token_count": 60},
        }
        if not i % 2:
            line.update(swipes=[text, text + " (alt)"], swipe_id=0,
                        swipe_info=[{"send_date": "2026-01-13T10:00:00.000Z"}] * 2)  # fmt: skip
        lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="record bench/results/formats.md")
    args = parser.parse_args()

    ours, baseline = _regex()
    chat = _chat_text()
    log = parse_chat(chat, source="bench")
    import_s = _median(lambda: parse_chat(chat, source="bench"))
    export_s = _median(lambda: chat_to_jsonl(log))
    exact = counter_for_model("gpt-4o")
    estimate = counter_for_model("claude-3-5-sonnet")
    exact.count("warm up")
    exact_s = _median(lambda: exact.count(REPLY))
    estimate_s = _median(lambda: estimate.count(REPLY))

    ratio = ours / baseline
    rows = [
        ("regex: 100 scripts over a 12 KB reply", f"{ours * 1000:.2f} ms"),
        ("regex baseline: 100 plain re.sub", f"{baseline * 1000:.2f} ms"),
        ("regex ratio (target <= 4x)", f"{ratio:.2f}x"),
        (f"chat import, 10,000 messages ({len(chat) / 1e6:.1f} MB)", f"{import_s * 1000:.0f} ms"),
        ("chat export, 10,000 messages", f"{export_s * 1000:.0f} ms"),
        ("tokens: exact o200k count of the 12 KB reply", f"{exact_s * 1000:.2f} ms"),
        ("tokens: estimate for other models", f"{estimate_s * 1000:.2f} ms"),
    ]
    table = "\n".join(
        ["| measurement | median |", "|---|---|", *(f"| {a} | {b} |" for a, b in rows)]
    )
    print(table)
    if args.write:
        machine = (
            f"{platform.python_implementation()} {platform.python_version()}, {platform.machine()}"
        )
        RESULTS.write_text(
            f"# Format code speed\n\nRecorded by `python -m bench.formats_bench --write` "
            f"({machine}; median of {ROUNDS} rounds).\n\n{table}\n",
            encoding="utf-8",
        )
    return 0 if ratio <= REGEX_TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
