"""{{if}}: SillyTavern conditions and Core Profile expressions."""

from __future__ import annotations

import pytest

from tests.test_macros.util import codes, ctx, run, text


def test_inline_and_scoped_forms() -> None:
    assert text("{{if::1::yes}}|{{if::0::yes}}|{{if::0::a{{else}}b}}") == "yes||b"
    assert text("{{if 1}}outer[{{if 0}}in{{else}}in-else{{/if}}]{{else}}never{{/if}}") == (
        "outer[in-else]"
    )


def test_inversion_only_from_the_raw_text() -> None:
    assert text("{{if !0}}A{{/if}}{{if !1}}B{{/if}}{{if ! false}}C{{/if}}") == "AC"
    assert text("{{setvar::c::!1}}{{if {{getvar::c}}}}T{{else}}F{{/if}}") == "T"


def test_variable_conditions() -> None:
    context = ctx(local={"a": "x", "b": "0"}, global_vars={"g": "1"})
    assert text("{{if .a}}A{{/if}}{{if !.b}}notB{{/if}}{{if $g}}G{{/if}}", context) == "AnotBG"


def test_only_the_chosen_branch_runs() -> None:
    context = ctx()
    assert text("{{if 0}}{{setvar::x::then}}{{else}}{{setvar::x::else}}{{/if}}", context) == ""
    assert context.local == {"x": "else"}


def test_extra_else_in_the_chosen_branch_vanishes() -> None:
    assert text("{{if 0}}a{{else}}b{{else}}c{{/if}}") == "bc"


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ("{{getvar::hp}} > 10 and {{getvar::mood}} == happy", "N"),
        ("{{getvar::hp}} > 10 and ({{getvar::mood}} == sad or not 1)", "Y"),
        ("1.0 == 1", "Y"),
        ("01 == 1", "Y"),
        ("abc == ABC", "N"),
        ('"5" == 5.0', "Y"),
        ("{{getvar::name}} contains Smith", "Y"),
        ("{{getvar::name}} startsWith ali", "N"),
        ('{{getvar::name}} == "Alice Smith"', "Y"),
        ("not 0 and not (1 == 2)", "Y"),
        ("0 or {{getvar::hp}} >= 12", "Y"),
        (".hp <= 11", "N"),
    ],
)
def test_core_profile_expressions(condition: str, expected: str) -> None:
    context = ctx(local={"hp": 12, "mood": "sad", "name": "Alice Smith"})
    assert text(f"{{{{if {condition}}}}}Y{{{{else}}}}N{{{{/if}}}}", context) == expected


def test_keywords_and_else_are_case_insensitive_in_expressions() -> None:
    assert text("{{IF 1 AND NOT 0}}y{{ELSE}}n{{/IF}}") == "y"


@pytest.mark.parametrize(
    ("condition", "code"),
    [
        ("{{getvar::x}} + 1", "macro_condition_unsupported"),
        ("{{getvar::x}} >= high", "macro_arg_type_invalid"),
        ("(1 == 1", "macro_parse_failed"),
        ("'' ==", "macro_parse_failed"),
        ("1 == 1 1", "macro_parse_failed"),
        ("'unclosed == 1", "macro_parse_failed"),
    ],
)
def test_failing_expressions_keep_the_block_raw(condition: str, code: str) -> None:
    template = f"{{{{if {condition}}}}}Y{{{{else}}}}N{{{{/if}}}}"
    result = run(template, ctx(local={"x": 1}))
    assert result.text == template
    assert codes(result) == [code]


def test_short_circuit_skips_writes() -> None:
    context = ctx()
    out = text(
        "{{if 0 and {{setvar::b::2}}}}x{{else}}y{{/if}}{{if 1 or {{setvar::c::3}}}}z{{/if}}",
        context,
    )
    assert out == "yz"
    assert context.local == {}


def test_unclosed_if_is_raw_with_a_warning() -> None:
    result = run("{{if {{x}}}}YES", dynamic_macros={"x": "true"})
    assert result.text == "{{if {{x}}}}YES"
    assert codes(result) == ["macro_scoped_block_unclosed"]


def test_if_with_preserve_flag_keeps_whitespace() -> None:
    assert text("[{{#if 1}}  spaced  {{/if}}]") == "[  spaced  ]"
