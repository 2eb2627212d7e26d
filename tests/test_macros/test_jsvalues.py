"""JavaScript number, string and JSON semantics (expected values computed with Node)."""

from __future__ import annotations

import math

import pytest

from engine.macros.jsvalues import (
    js_falsy,
    js_number,
    js_trim,
    json_stringify,
    number_to_string,
    string_to_number,
    to_display,
    to_number,
)

NUMBER_OF = [
    ("007", "7"),
    ("1e3", "1000"),
    ("0x10", "16"),
    ("0b11", "3"),
    (" 42 ", "42"),
    ("-0", "0"),
    ("Infinity", "Infinity"),
    (".5", "0.5"),
    ("5.", "5"),
    ("+5", "5"),
    ("12345678901234567890", "12345678901234567000"),
    ("1_000", "NaN"),
    ("12abc", "NaN"),
    ("  ", "0"),
    ("", "0"),
    ("0o17", "15"),
    ("-0x10", "NaN"),
    ("1e", "NaN"),
    ("e5", "NaN"),
    ("+.5e-3", "0.0005"),
    ("\n7\t", "7"),
]

STRING_OF = [
    (17.5, "17.5"),
    (0.1 + 0.2, "0.30000000000000004"),
    (1e21, "1e+21"),
    (1e-7, "1e-7"),
    (123456789012345680000.0, "123456789012345680000"),
    (1.5e-5, "0.000015"),
    (100.0, "100"),
    (-0.000001, "-0.000001"),
    (2.0**53 + 2, "9007199254740994"),
    (1 / 3, "0.3333333333333333"),
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (1e20, "100000000000000000000"),
    (0.000001, "0.000001"),
]


@pytest.mark.parametrize(("source", "expected"), NUMBER_OF)
def test_number_of_a_string_matches_javascript(source: str, expected: str) -> None:
    assert number_to_string(string_to_number(source)) == expected


@pytest.mark.parametrize(("value", "expected"), STRING_OF)
def test_string_of_a_number_matches_javascript(value: float, expected: str) -> None:
    assert number_to_string(value) == expected


def test_number_of_other_values() -> None:
    assert to_number(True) == 1
    assert to_number(None) == 0
    assert to_number([]) == 0
    assert to_number([5]) == 5
    assert math.isnan(to_number([1, 2]))
    assert math.isnan(to_number({"k": 1}))


def test_display_and_json() -> None:
    assert to_display(None) == ""
    assert to_display(True) == "true"
    assert to_display(1.5) == "1.5"
    assert to_display({"a": [1, 2.0, "é"]}) == '{"a":[1,2,"é"]}'
    assert json_stringify(float("nan")) == "null"
    assert js_number(13.0) == 13 and isinstance(js_number(13.0), int)


def test_trim_keeps_the_else_marker_bytes() -> None:
    # Python's str.strip would also strip \x1f; JavaScript's trim does not.
    assert js_trim("\x1fx\x1f") == "\x1fx\x1f"
    assert js_trim("\u00a0 x \ufeff") == "x"


def test_falsy() -> None:
    assert all(js_falsy(v) for v in ("", 0, 0.0, None, False, float("nan")))
    assert not any(js_falsy(v) for v in ("0", " ", 1, [], {}))
