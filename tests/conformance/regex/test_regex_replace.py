"""Every vector of regex_replace.jsonl through run_script."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.formats.regex_scripts import parse_regex_script
from engine.prompt.regex_run import run_script
from tests.conftest import CONFORMANCE

VECTORS = CONFORMANCE / "regex_replace.jsonl"
CASES: list[dict[str, Any]] = [
    json.loads(line) for line in VECTORS.read_text(encoding="utf-8").splitlines() if line.strip()
]


def test_all_vectors_loaded() -> None:
    assert len(CASES) >= 12


@pytest.mark.parametrize("case", CASES, ids=[c["findRegex"] for c in CASES])
def test_vector(case: dict[str, Any]) -> None:
    script = parse_regex_script(
        {
            "scriptName": "vector",
            "findRegex": case["findRegex"],
            "replaceString": case["replaceString"],
            "trimStrings": case["trimStrings"],
            "placement": [2],
        },
        source="regex_replace.jsonl",
    )
    run = run_script(script, case["input"])
    if case["output"] == "(inert)":
        assert run.text == case["input"]
        assert [w.code for w in run.warnings] == ["invalid_regex"]
    else:
        assert run.text == case["output"]
        assert run.warnings == ()
