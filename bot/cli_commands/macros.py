"""``tavernbot macros eval|preview``: the macro engine's conformance and debugging interface.

``macros eval --jsonl`` reads ``{"template", "env"}`` objects, one per line, from stdin and
writes one ``{"text", "local", "global", "warnings", "mutations", "error"}`` line per input, in
order; a malformed line gives a line with ``error`` set and the run goes on.
``macros preview TEXT --var k=v`` evaluates one text for people and prints the result, then the
warnings and the variable writes.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from engine.macros import PHASES, MacroContext, evaluate
from engine.macros.envjson import run_case


def register(sub: Any) -> None:
    """Add the ``macros`` command group."""
    parser = sub.add_parser("macros", help="evaluate macro text (conformance and debugging)")
    inner = parser.add_subparsers(dest="macros_command", metavar="ACTION", required=True)

    run = inner.add_parser(
        "eval",
        help="evaluate {template, env} JSON from stdin",
        description='With --jsonl, read one {"template", "env"} object per line and write '
        "one result line per input. Without it, read a single object and print its result.",
    )
    run.add_argument("--jsonl", action="store_true", help="one JSON object per line")
    run.set_defaults(handler=_eval)

    preview = inner.add_parser("preview", help="evaluate one text and explain the result")
    preview.add_argument("text", help="the text to evaluate (use - to read stdin)")
    preview.add_argument(
        "--var", action="append", default=[], metavar="K=V", help="a local variable"
    )
    preview.add_argument(
        "--global-var", action="append", default=[], metavar="K=V", help="a global variable"
    )
    preview.add_argument("--user", default="User", help="the user's name")
    preview.add_argument("--char", default="Character", help="the character's name")
    preview.add_argument("--phase", choices=PHASES, default="preview")
    preview.add_argument(
        "--read-only", action="store_true", help="evaluate as user-authored platform text"
    )
    preview.add_argument("--trace", action="store_true", help="also print every macro's trace")
    preview.set_defaults(handler=_preview)


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _error_line(message: str) -> dict[str, Any]:
    return {
        "text": None,
        "local": None,
        "global": None,
        "warnings": [],
        "warning_details": [],
        "mutations": [],
        "error": message,
    }


def eval_lines(source: TextIO, sink: TextIO) -> int:
    """The ``--jsonl`` loop: never stops on a bad line; returns the number of bad lines."""
    bad = 0
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except ValueError as exc:
            result = _error_line(f"line {number}: not JSON: {exc}")
        else:
            try:
                result = run_case(case)
            except Exception as exc:  # the engine never raises; this is a last line of defence
                result = _error_line(f"line {number}: {type(exc).__name__}: {exc}")
        if result.get("error"):
            bad += 1
        sink.write(_dump(result) + "\n")
        sink.flush()
    return bad


def _eval(args: argparse.Namespace) -> int:
    if args.jsonl:
        eval_lines(sys.stdin, sys.stdout)
        return 0
    try:
        case = json.loads(sys.stdin.read())
    except ValueError as exc:
        print(f"tavernbot: stdin is not a JSON object: {exc}", file=sys.stderr)
        return 2
    result = run_case(case)
    print(json.dumps(result, ensure_ascii=False, indent=2))
    return 1 if result.get("error") else 0


def _pairs(items: list[str], option: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"tavernbot: {option} expects KEY=VALUE, got {item!r}")
        out[key] = value
    return out


def _preview(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    context = MacroContext(
        user=args.user,
        char=args.char,
        local=_pairs(args.var, "--var"),
        global_vars=_pairs(args.global_var, "--global-var"),
    )
    result = evaluate(
        text,
        context,
        phase=args.phase,
        access="read_only" if args.read_only else "full",
        trace=args.trace,
    )
    print(result.text)
    if result.warnings:
        print("\nwarnings:")
        for warning in result.warnings:
            print(f"  [{warning.code}] at {warning.position}: {warning.message}")
    if result.mutations:
        print("\nvariable writes:")
        for mutation in result.mutations:
            if mutation.kind == "delete":
                print(f"  delete {mutation.scope} {mutation.key}")
            else:
                print(f"  set {mutation.scope} {mutation.key} = {_dump(mutation.value)}")
    if args.trace and result.traces:
        print("\ntrace:")
        for trace in result.traces:
            branch = f" ({trace.selected_branch})" if trace.selected_branch else ""
            print(
                f"  {trace.source_kind} {trace.macro_name}{branch}: {trace.raw_text!r} -> "
                f"{trace.resolved_text!r}"
            )
    return 0
