"""Parsing and exporting regex-script files; malformed input; fuzzing."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import FormatError
from engine.formats.regex_scripts import (
    MAX_SCRIPTS_PER_FILE,
    card_regex_scripts,
    parse_regex_scripts,
    regex_script_to_json,
)
from engine.prompt.regex_run import apply_scripts

ONE = {
    "id": "5c6f",
    "scriptName": "Trim",
    "findRegex": "/\\s+$/g",
    "replaceString": "",
    "trimStrings": [],
    "placement": [2],
    "disabled": False,
    "markdownOnly": False,
    "promptOnly": True,
    "runOnEdit": True,
    "substituteRegex": 0,
    "minDepth": None,
    "maxDepth": 5,
    "vendorField": {"kept": True},
}


def test_single_object_and_list() -> None:
    (one,) = parse_regex_scripts(json.dumps(ONE).encode(), source="trim.json")
    assert (one.id, one.script_name, one.placement, one.prompt_only, one.max_depth) == (
        "5c6f",
        "Trim",
        (2,),
        True,
        5,
    )
    many = parse_regex_scripts(json.dumps([ONE, {**ONE, "id": "b"}]), source="all.json")
    assert [s.id for s in many] == ["5c6f", "b"]


def test_round_trip_keeps_unknown_keys() -> None:
    (one,) = parse_regex_scripts(ONE, source="x")
    out = regex_script_to_json(one)
    assert out == ONE
    assert parse_regex_scripts(out, source="again") == (one,)


def test_loose_values_like_st() -> None:
    loose = {"scriptName": "L", "minDepth": "", "maxDepth": "3", "substituteRegex": True,
             "placement": [1, "2"]}  # fmt: skip
    (s,) = parse_regex_scripts(loose, source="l.json")
    assert (s.min_depth, s.max_depth, s.substitute_regex, s.placement) == (None, 3, 1, (1, 2))
    assert s.id  # a missing id is assigned


def test_card_scoped_scripts() -> None:
    assert card_regex_scripts({}, source="c") == ()
    (s,) = card_regex_scripts({"regex_scripts": [ONE]}, source="c")
    assert s.script_name == "Trim"
    with pytest.raises(FormatError) as info:
        card_regex_scripts({"regex_scripts": [{"findRegex": "x"}]}, source="card.png")
    assert info.value.field == "data.extensions.regex_scripts[0].scriptName"


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("[", ""),
        ("3", ""),
        ('{"findRegex": "x"}', "scriptName"),
        ('[{"scriptName": "a"}, 4]', "[1]"),
        ('{"scriptName": 1.5e999}', ""),
        ('{"scriptName": "a", "placement": 2}', "placement"),
        ('{"scriptName": "a", "placement": [true]}', "placement[0]"),
        ('{"scriptName": "a", "trimStrings": [1]}', "trimStrings[0]"),
        ('{"scriptName": "a", "minDepth": "deep"}', "minDepth"),
        ('{"scriptName": "a", "disabled": "no"}', "disabled"),
        ('[{"scriptName": "a", "findRegex": {}}]', "[0].findRegex"),
    ],
)
def test_malformed(value: str, field: str) -> None:
    with pytest.raises(FormatError) as info:
        parse_regex_scripts(value.encode(), source="bad.json")
    assert (info.value.source, info.value.field) == ("bad.json", field)


def test_script_count_limit() -> None:
    with pytest.raises(FormatError, match="MAX_SCRIPTS_PER_FILE"):
        parse_regex_scripts([ONE] * (MAX_SCRIPTS_PER_FILE + 1), source="huge.json")
    assert len(parse_regex_scripts([ONE] * 3, source="ok.json")) == 3


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=16,
)
script_keys = st.sampled_from(
    ["id", "scriptName", "findRegex", "replaceString", "trimStrings", "placement", "disabled",
     "markdownOnly", "promptOnly", "runOnEdit", "substituteRegex", "minDepth", "maxDepth"]
)  # fmt: skip
script_like = st.dictionaries(script_keys, json_values, max_size=8)
patterns = st.text(alphabet="ab()[]{}|*+?^$.\\/-,:<>=!kdwsbBcux0123gimsuy", max_size=24)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(lambda t: t.encode("utf-8", "replace")))
def test_fuzz_bytes(data: bytes) -> None:
    try:
        parse_regex_scripts(data, source="fuzz")
    except FormatError as exc:
        assert exc.source == "fuzz"


@settings(max_examples=200, deadline=None)
@given(st.lists(script_like, max_size=3) | script_like)
def test_fuzz_script_shaped(value: object) -> None:
    try:
        scripts = parse_regex_scripts(json.dumps(value).encode(), source="fuzz")
    except FormatError:
        return
    for script in scripts:
        regex_script_to_json(script)
    apply_scripts("some text ab", scripts, placement=1, channel="store", timeout_s=0.05)


@settings(max_examples=400, deadline=None)
@given(patterns, st.text(alphabet="ab$<>1&{}", max_size=10), st.text(max_size=20))
def test_fuzz_patterns_never_raise(pattern: str, replacement: str, text: str) -> None:
    (script,) = parse_regex_scripts(
        {"scriptName": "f", "findRegex": pattern, "replaceString": replacement, "placement": [1]},
        source="fuzz",
    )
    run = apply_scripts(text, [script], placement=1, channel="store", timeout_s=0.05)
    assert isinstance(run.text, str)
