"""``tavernbot macros eval --jsonl`` and ``tavernbot macros preview``."""

from __future__ import annotations

import io
import json

import pytest

from bot.cli import main
from bot.cli_commands.macros import eval_lines


def test_eval_jsonl_answers_every_line_in_order() -> None:
    lines = [
        json.dumps({"template": "{{setvar::a::1}}{{user}}", "env": {"user": "Al"}}),
        "not json",
        "",
        json.dumps({"template": 5}),
        json.dumps({"template": "{{.n++}}", "env": {"local": {"n": 1}, "phase": "commit"}}),
        json.dumps(["wrong"]),
        json.dumps(
            {
                "template": "{{big}}{{big}}",
                "env": {"dynamicMacros": {"big": "12345"}, "limits": {"max_output_chars": 7}},
            }
        ),
    ]
    out = io.StringIO()
    bad = eval_lines(io.StringIO("\n".join(lines) + "\n"), out)
    results = [json.loads(line) for line in out.getvalue().splitlines()]
    assert bad == 3 and len(results) == 6
    first = results[0]
    assert first == {
        "text": "Al",
        "local": {"a": "1"},
        "global": {},
        "warnings": [],
        "warning_details": [],
        "mutations": [{"kind": "set", "scope": "local", "key": "a", "value": "1"}],
        "error": None,
    }
    assert results[1]["error"].startswith("line 2: invalid JSON")
    assert results[2]["error"] == "'template' must be a string"
    assert results[3]["text"] == "" and results[3]["warnings"] == ["macro_eval_phase_disallowed"]
    assert results[4]["error"]
    assert results[5]["text"] == "1234512"


def test_eval_jsonl_through_the_command_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        "sys.stdin", io.StringIO('{"template": "{{char}}", "env": {"char": "B"}}\n')
    )
    assert main(["macros", "eval", "--jsonl"]) == 0
    assert json.loads(capsys.readouterr().out)["text"] == "B"


def test_preview_prints_result_warnings_and_writes(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["macros", "preview", "{{.hp++}} {{nope}} {{user}}", "--var", "hp=5", "--user", "Ann"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0] == "6 {{nope}} Ann"
    assert "[macro_unknown]" in out and "set local hp = 6" in out


def test_preview_read_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["macros", "preview", "{{setvar::a::1}}", "--read-only"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "{{setvar::a::1}}"
    assert "macro_write_forbidden" in out and "variable writes" not in out


def test_eval_single_object_prints_an_indented_result(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO('{"template": "{{reverse::ab}}"}'))
    assert main(["macros", "eval"]) == 0
    assert json.loads(capsys.readouterr().out)["text"] == "ba"
    monkeypatch.setattr("sys.stdin", io.StringIO("nope"))
    assert main(["macros", "eval"]) == 2
