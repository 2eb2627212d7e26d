"""``tavernbot prompt dry-run`` with a backtracking world book and regex scripts (issue 12):
the run stops at the turn's regex budget and prints its one warning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main

EVIL_TEXT = "a" * 200 + "!"


def _write(path: Path, data: object) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_a_dry_run_is_bounded_by_the_regex_budget_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Trap"}}
    book = {
        "entries": {
            str(i): {"uid": i, "key": [f"/(a|aa)+(z{i})?$/"], "content": f"trap {i}"}
            for i in range(200)
        }
    }
    scripts = [
        {
            "scriptName": f"evil {i}",
            "findRegex": "/(a|aa)+$/",
            "replaceString": "X",
            "placement": [1],
            "promptOnly": True,
        }
        for i in range(24)
    ]
    code = main(
        [
            "prompt",
            "dry-run",
            "--card",
            _write(tmp_path / "trap.json", card),
            "--worldbook",
            _write(tmp_path / "trap_book.json", book),
            "--regex",
            _write(tmp_path / "evil.json", scripts),
            "--message",
            EVIL_TEXT,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    budget = [line for line in out.splitlines() if "regex budget exhausted" in line]
    assert len(budget) == 1, out[-2000:]
    assert budget[0].startswith("warning: ") and "TURN_REGEX_BUDGET_S=" in budget[0]
    assert "script runs and " in budget[0] and "world-info key tests were skipped" in budget[0]
    assert "; 0 world entries" in out  # no backtracking key matched: they were cut
    # the user's line went through untouched: every script was skipped or gave up
    assert f"\n{EVIL_TEXT}\n" in out
