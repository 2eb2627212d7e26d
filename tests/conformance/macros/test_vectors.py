"""Every SillyTavern and TavernHeadless macro vector (the oracle samples, SillyTavern's own
upstream specs and the Core Profile file), through the conformance interface."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from engine.macros.envjson import run_case
from tests.conftest import CONFORMANCE

HERE = CONFORMANCE
IGNORED_WARNINGS = {"macro_preview_side_effect_suppressed"}

#: Vectors whose expectation contradicts a design decision: id -> (reason, design's text).
DEVIATIONS: dict[str, tuple[str, str]] = {
    "th.legacy_aliases": (
        "<GROUP> is SillyTavern's {{group}} (the character in a solo chat)",
        "Alice meets Bob and BobBob!",
    ),
    "th.incvar_on_nonnumeric": (
        "incvar on text appends 1 (SillyTavern store semantics)",
        'abc1|{"a":1}1',
    ),
    "th.unmatched_closing_if": (
        "a stray closing tag stays text and the rest is evaluated (SillyTavern syntax, issue 15)",
        "text{{/if}} more Alice",
    ),
}


def _load(name: str) -> list[dict[str, Any]]:
    with (HERE / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


CASES = (
    _load("st_language.jsonl")
    + _load("th_core_profile.jsonl")
    + _load("st_upstream_macro_tests.jsonl")
)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def _check_nondeterministic(case: dict[str, Any], text: str) -> None:
    """Each ``{{random}}`` picks one of its items; each ``{{roll}}`` lands in its range."""
    template = case["template"]
    if template.startswith("{{random"):
        parts = text.split(" ")
        assert parts[0] in {"a", "b", "c"}
        assert parts[1] in {"x", "y", "z"}
        assert parts[2] == "only"
        assert parts[3] in {"a,b", "c"}
    else:
        match = re.fullmatch(r"(\d+) (\d+) (\d+) \[\]", text)
        assert match, text
        d6, d20, two_d6 = (int(g) for g in match.groups())
        assert 1 <= d6 <= 6
        assert 1 <= d20 <= 20
        assert 5 <= two_d6 <= 15


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_vector(case: dict[str, Any]) -> None:
    out = run_case({"template": case["template"], "env": case["env"]})
    expect = case["expect"]
    assert out["error"] is None
    assert "macro_internal_error" not in out["warnings"]
    if case["check"] == "nondeterministic":
        _check_nondeterministic(case, out["text"])
        return
    if "warnings" in expect:
        assert (
            set(out["warnings"]) - IGNORED_WARNINGS == set(expect["warnings"]) - IGNORED_WARNINGS
        )
    if case["check"] == "warnings":
        return
    deviation = DEVIATIONS.get(case["id"])
    if deviation is not None:
        assert out["text"] == deviation[1], deviation[0]
        assert out["text"] != expect["text"]
        return
    assert out["text"] == expect["text"]
    for store in ("local", "global"):
        if store in expect:
            assert _same(out[store], expect[store]), store
    if "mutations" in expect:
        got = out["mutations"]
        assert len(got) == len(expect["mutations"])
        for mine, theirs in zip(got, expect["mutations"], strict=True):
            assert (mine["kind"], mine["scope"], mine["key"]) == (
                theirs["kind"],
                theirs["scope"],
                theirs["key"],
            )
            if "value" in theirs:
                assert _text_of(mine["value"]) == _text_of(theirs["value"]) or _same(
                    mine["value"], theirs["value"]
                )


def test_every_vector_file_is_complete() -> None:
    assert len(_load("st_language.jsonl")) == 98
    assert len(_load("th_core_profile.jsonl")) == 52
    assert len(_load("st_upstream_macro_tests.jsonl")) == 280
