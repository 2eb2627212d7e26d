"""``tavernbot macros eval|preview``: the macro engine's conformance and debugging interface.

``macros eval --jsonl`` reads ``{"template", "env"}`` objects, one per line, from stdin and
writes one ``{"text", "local", "global", "warnings", "mutations", "error"}`` line per input, in
order; a bad line gives a line with ``error`` set (naming the line) and the run goes on. Input
lines are read as JSON the way every import reads it (:func:`engine.formats.json_input.loads`):
bytes that are not UTF-8, ``NaN``/``Infinity``, numbers beyond double range, lone surrogates
and deep nesting are each such a bad line. Every output line is standard JSON: a number that
is not finite (an overflow in the macros) is written as ``null``, as JavaScript's
``JSON.stringify`` writes it, so no ``Infinity`` ever reaches a reader.
``macros preview TEXT --var k=v`` evaluates one text for people and prints the result, then the
warnings and the variable writes.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable
from typing import Any, BinaryIO, TextIO

from bot.cli_commands import Subcommands
from engine.errors import FormatError
from engine.formats.json_input import decode_text, loads
from engine.macros import PHASES, MacroContext, evaluate
from engine.macros.envjson import run_case


def register(sub: Subcommands) -> None:
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
    # A pair is checked while parsing, so a bad one is a usage error (exit 2) like any other.
    preview.add_argument(
        "--var", action="append", default=[], type=_pair, metavar="K=V", help="a local variable"
    )
    preview.add_argument(
        "--global-var",
        action="append",
        default=[],
        type=_pair,
        metavar="K=V",
        help="a global variable",
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
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _finite(value: Any) -> Any:
    """``value`` with every non-finite number replaced by ``None`` (JSON ``null``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


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


def eval_line(number: int, line: str | bytes) -> dict[str, Any]:
    """The result of input line ``number`` (1-based): never raises."""
    where = f"line {number}"
    try:
        text = line.decode("utf-8") if isinstance(line, bytes) else line
    except UnicodeDecodeError as exc:
        return _error_line(f"{where}: not UTF-8 text (byte {exc.start})")
    try:
        case = loads(text, source="", field=where)
        return run_case(case)
    except FormatError as exc:
        return _error_line(str(exc))
    except Exception as exc:  # the engine never raises; this is a last line of defence
        return _error_line(f"{where}: {type(exc).__name__}: {exc}")


def _render(number: int, result: dict[str, Any]) -> str:
    """One output line of standard JSON, whatever ``result`` holds."""
    try:
        try:
            out = _dump(result)
        except ValueError:  # a number that is not finite
            out = _dump(_finite(result))
        out.encode("utf-8")  # a lone surrogate cannot be written to a UTF-8 stream
    except UnicodeEncodeError as exc:
        return _dump(
            _error_line(f"line {number}: the result holds a lone surrogate ({exc.reason})")
        )
    except (ValueError, RecursionError, MemoryError) as exc:
        return _dump(_error_line(f"line {number}: the result cannot be written as JSON: {exc}"))
    return out


def eval_lines(source: Iterable[str | bytes], sink: TextIO) -> int:
    """The ``--jsonl`` loop over text or byte lines: never stops on a bad line; returns the
    number of bad lines."""
    bad = 0
    for number, line in enumerate(source, start=1):
        if not line.strip():
            continue
        result = eval_line(number, line)
        if result.get("error"):
            bad += 1
        sink.write(_render(number, result) + "\n")
        sink.flush()
    return bad


def _stdin() -> BinaryIO | TextIO:
    """Standard input as bytes; as text when it has no byte layer (a replaced ``sys.stdin``)."""
    return sys.stdin.buffer if hasattr(sys.stdin, "buffer") else sys.stdin


def _eval(args: argparse.Namespace) -> int:
    if args.jsonl:
        # Bytes, so that one line that is not UTF-8 is one error line, not the end of the run.
        eval_lines(_stdin(), sys.stdout)
        return 0
    raw = _stdin().read()
    try:
        case = loads(
            raw if isinstance(raw, str) else decode_text(raw, source="stdin"), source="stdin"
        )
    except FormatError as exc:
        print(f"tavernbot: {exc}", file=sys.stderr)
        return 2
    result = run_case(case)
    print(json.dumps(_finite(result), ensure_ascii=False, indent=2, allow_nan=False))
    return 1 if result.get("error") else 0


def _pair(item: str) -> tuple[str, str]:
    """One ``KEY=VALUE`` option value (the value may hold ``=``)."""
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expects KEY=VALUE, got {item!r}")
    return key, value


def _preview(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    context = MacroContext(
        user=args.user,
        char=args.char,
        local=dict(args.var),
        global_vars=dict(args.global_var),
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
