"""Every vector of wi_key_match.jsonl: the engine matches keys as SillyTavern does."""

from __future__ import annotations

import json

import pytest

from engine.prompt.wi_match import Haystack, MatchOptions, match_key
from tests.conftest import CONFORMANCE

VECTORS = [
    json.loads(line)
    for line in (CONFORMANCE / "wi_key_match.jsonl").read_text("utf-8").splitlines()
    if line.strip()
]


def test_vectors_are_present() -> None:
    assert len(VECTORS) == 10


@pytest.mark.parametrize("case", VECTORS, ids=[f"{i}:{c['key']}" for i, c in enumerate(VECTORS)])
def test_key_match_vector(case: dict[str, object]) -> None:
    opts = case["opts"]
    assert isinstance(opts, dict)
    options = MatchOptions(
        case_sensitive=bool(opts.get("caseSensitive", False)),
        match_whole_words=bool(opts.get("matchWholeWords", False)),
    )
    assert match_key(Haystack(str(case["buffer"])), str(case["key"]), options) is case["result"]
