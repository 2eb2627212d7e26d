"""``tavernbot macros eval --jsonl`` as a real process: a bad line never stops the run.

Every input line gets exactly one output line, every output line is strict JSON (no bare
``Infinity``/``NaN``), and hostile lines (a 10,000-segment variable path, a lone surrogate,
bytes that are not UTF-8, nesting thousands of levels deep) give an ``error`` or a warning.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from engine.macros.paths import MAX_PATH_SEGMENTS
from tests.conftest import ROOT

DEEP_PATH = ".".join(["a"] * 10_000)
OK_CASE = json.dumps({"template": "{{user}} ok", "env": {"user": "Ann"}}).encode()


def _strict(line: bytes) -> dict[str, Any]:
    """Parse one output line as standard JSON: NaN and Infinity are refused."""

    def refuse(name: str) -> None:
        raise AssertionError(f"output line holds {name}, which is not JSON: {line[:200]!r}")

    value: dict[str, Any] = json.loads(line.decode("utf-8"), parse_constant=refuse)
    return value


def run_eval(tmp_path: Path, *lines: bytes) -> tuple[int, list[dict[str, Any]], str]:
    """Pipe ``lines`` into ``tavernbot macros eval --jsonl``; (exit code, results, stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "bot", "macros", "eval", "--jsonl"],
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    out = [_strict(line) for line in done.stdout.splitlines()]
    return done.returncode, out, done.stderr.decode("utf-8", "replace")


def test_a_ten_thousand_segment_path_is_a_warning_and_the_run_goes_on(tmp_path: Path) -> None:
    code, out, err = run_eval(
        tmp_path,
        json.dumps({"template": "{{setvar::" + DEEP_PATH + "::1}}x"}).encode(),
        json.dumps({"template": "{{getvar::" + DEEP_PATH + "}}y"}).encode(),
        OK_CASE,
    )
    assert code == 0 and "Traceback" not in err
    assert len(out) == 3
    for result in out[:2]:
        assert result["error"] is None
        assert "macro_parse_failed" in result["warnings"]
        assert "MAX_PATH_SEGMENTS" in json.dumps(result["warning_details"])
    assert out[0]["local"] == {} and out[0]["mutations"] == []
    assert out[2]["text"] == "Ann ok"


def test_a_path_at_the_segment_limit_still_works(tmp_path: Path) -> None:
    path = ".".join(["a"] * MAX_PATH_SEGMENTS)
    over = ".".join(["a"] * (MAX_PATH_SEGMENTS + 1))
    template = "{{setvar::" + path + "::7}}{{getvar::" + path + "}}|{{getvar::" + over + "}}"
    _, out, _ = run_eval(tmp_path, json.dumps({"template": template}).encode())
    assert out[0]["text"].startswith("7|")
    assert out[0]["warnings"] == ["macro_parse_failed"]


def test_a_lone_surrogate_is_an_error_line_and_the_run_goes_on(tmp_path: Path) -> None:
    code, out, err = run_eval(
        tmp_path,
        b'{"template": "x\\ud800y", "env": {}}',
        b'{"template": "{{user}}", "env": {"user": "\\udfff"}}',
        OK_CASE,
    )
    assert code == 0 and "Traceback" not in err
    assert len(out) == 3
    assert out[0]["error"].startswith("line 1: ") and "surrogate" in out[0]["error"]
    assert out[1]["error"].startswith("line 2: ") and "surrogate" in out[1]["error"]
    assert out[2]["text"] == "Ann ok"


def test_non_finite_numbers_never_reach_the_output(tmp_path: Path) -> None:
    code, out, err = run_eval(
        tmp_path,
        json.dumps(
            {"template": "{{setvar::m::1e308}}{{addvar::m::1e308}}{{getvar::m}}", "env": {}}
        ).encode(),
        b'{"template": "{{getvar::x}}", "env": {"local": {"x": 1e400}}}',
        b'{"template": "{{getvar::x}}", "env": {"local": {"x": NaN}}}',
        OK_CASE,
    )
    assert code == 0 and "Traceback" not in err
    assert len(out) == 4  # every line was strict JSON (see _strict)
    assert out[0]["error"] is None
    assert out[0]["local"]["m"] in (None, "1e308")  # null, or never stored
    assert out[1]["error"].startswith("line 2: ") and "range" in out[1]["error"]
    assert out[2]["error"].startswith("line 3: ") and "NaN" in out[2]["error"]
    assert out[3]["text"] == "Ann ok"


def test_bytes_that_are_not_utf8_and_deep_nesting_are_error_lines(tmp_path: Path) -> None:
    code, out, err = run_eval(
        tmp_path,
        b'{"template": "caf\xe9"}',
        b'{"template": "x", "env": {"local": {"d": ' + b"[" * 10_000 + b"]" * 10_000 + b"}}}",
        OK_CASE,
    )
    assert code == 0 and "Traceback" not in err
    assert len(out) == 3
    assert out[0]["error"].startswith("line 1: ") and "UTF-8" in out[0]["error"]
    assert out[1]["error"].startswith("line 2: ") and "depth" in out[1]["error"].lower()
    assert out[2]["text"] == "Ann ok"


def test_the_single_object_form_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    for data, problem in ((b'{"template": "\\ud800"}', "surrogate"), (b"caf\xe9", "UTF-8")):
        done = subprocess.run(
            [sys.executable, "-m", "bot", "macros", "eval"],
            input=data,
            capture_output=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
        err = done.stderr.decode("utf-8")
        assert done.returncode == 2 and done.stdout == b""
        assert err.count("\n") == 1 and problem in err and "Traceback" not in err
