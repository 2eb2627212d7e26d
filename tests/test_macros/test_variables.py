"""Variable macros and shorthand: store semantics, both views, paths, mutations."""

from __future__ import annotations

import pytest

from tests.test_macros.util import codes, ctx, run, text


def test_set_get_and_stores_are_separate() -> None:
    context = ctx()
    out = text("{{setvar::x::L}}{{setglobalvar::x::G}}{{getvar::x}}{{getglobalvar::x}}", context)
    assert out == "LG"
    assert context.local == {"x": "L"} and context.global_vars == {"x": "G"}


def test_coercion_of_stored_values() -> None:
    context = ctx(local={"a": "007", "b": "1e3", "c": " 42 ", "e": "  ", "o": {"k": 1}, "l": [5]})
    out = text(
        "{{getvar::a}}|{{getvar::b}}|{{getvar::c}}|[{{getvar::e}}]|{{getvar::o}}|{{.l}}", context
    )
    assert out == '7|1000|42|[  ]|{"k":1}|5'
    assert text("{{getvar::b}}|[{{getvar::n}}]", ctx(local={"b": True, "n": None})) == "true|[]"


def test_add_inc_dec() -> None:
    context = ctx(local={"n": "10", "list": '["a"]', "s": "x"})
    out = text(
        "{{addvar::n::5}}{{addvar::n::2.5}}{{getvar::n}} {{addvar::list::b}}{{getvar::list}} "
        "{{incvar::c}}{{incvar::c}}{{decvar::missing}} {{addvar::s::-y}}{{getvar::s}}",
        context,
    )
    assert out == '17.5 ["a","b"] 12-1 x-y'
    assert context.local["n"] == 17.5 and context.local["c"] == 2


def test_has_and_delete_with_aliases() -> None:
    context = ctx(local={"x": "1", "y": ""}, global_vars={"g": 1})
    out = text(
        "{{hasvar::x}} {{varexists::y}} {{deletevar::x}}{{hasvar::x}} {{flushvar::y}}"
        "{{globalvarexists::g}}{{flushglobalvar::g}}{{hasglobalvar::g}}",
        context,
    )
    assert out == "true true false truefalse"
    assert context.local == {} and context.global_vars == {}


def test_shorthand_operators() -> None:
    context = ctx(local={"n": "10", "e": "", "z": "0", "a": "false"})
    out = text(
        "{{.n += 5}}{{.n -= 2}}{{.n}} {{.n++}}{{.n--}} [{{.e || d}}][{{.e ?? d}}][{{.z || d}}]"
        "[{{.z ?? d}}] [{{.a ||= A}}{{.a}}] [{{.b ??= B}}{{.b}}] {{.n == 13}} {{.n != 13}} "
        "{{.n > 4}} {{.n >= 13}} {{.n < 13}} {{.n <= 12}} {{$g = 1}}{{$g++}}",
        context,
    )
    assert out == "13 1413 [d][][d][0] [AA] [BB] true false true true false false 2"
    assert context.global_vars == {"g": 2}


def test_shorthand_fallback_values_are_lazy() -> None:
    context = ctx(local={"x": "here"})
    assert (
        text("{{.x ?? {{setvar::side::ran}}}}{{.y ?? {{setvar::side2::ran}}}}", context) == "here"
    )
    assert context.local == {"x": "here", "side2": "ran"}


def test_minus_assign_needs_a_number() -> None:
    result = run("{{.n -= abc}}{{.n}}", ctx(local={"n": "3"}))
    assert result.text == "3"
    assert codes(result) == ["macro_arg_type_invalid"]


def test_structured_paths_read_write_delete() -> None:
    context = ctx(local={"a": {"b": 1, "c": {"d": [1, 2]}}, "a.x": "flat"})
    out = text(
        "{{getvar::a.b}}/{{getvar::a.c.d}}/[{{getvar::a.zz}}]/{{hasvar::a.c}}/{{getvar::a.x}}",
        context,
    )
    assert out == "1/[1,2]/[]/true/flat"
    result = run("{{setvar::stats.hp::10}}{{.stats.mp = 3}}{{addvar::stats.hp::5}}{{.stats.hp}}")
    assert result.text == "15"
    assert [m.key for m in result.mutations] == ["stats", "stats", "stats"]
    assert result.mutations[-1].value == {"hp": "15", "mp": "3"}
    context = ctx(local={"inv": {"big sword": 2, "x.y": "dot"}})
    assert text("{{getvar::inv[\"big sword\"]}}|{{.inv['x.y']}}", context) == "2|dot"
    context = ctx(local={"a": {"b": 1, "c": 2}})
    result = run("{{deletevar::a.b}}{{getvar::a}}", context)
    assert result.text == '{"c":2}'
    assert result.mutations[0].kind == "set" and result.mutations[0].value == {"c": 2}


@pytest.mark.parametrize(
    ("template", "code"),
    [
        ("{{getvar::a..b}}", "macro_parse_failed"),
        ("{{getvar::a[0]}}", "macro_parse_failed"),
        ("{{getvar::s.x}}", "macro_arg_type_invalid"),
        ("{{setvar::s.x::1}}", "macro_arg_type_invalid"),
    ],
)
def test_bad_paths_keep_the_macro_raw(template: str, code: str) -> None:
    result = run(template, ctx(local={"s": "str"}))
    assert result.text == template
    assert codes(result) == [code]
    assert result.mutations == ()


def test_bare_name_reads_variables_as_they_were_at_the_start() -> None:
    context = ctx(local={"mood": "sad"}, global_vars={"g": "G", "mood": "global"})
    out = text("{{setvar::mood::happy}}{{getvar::mood}}/{{mood}}/{{g}}", context)
    assert out == "happy/sad/G"
    assert text("{{mood}}", context) == "happy"  # the next evaluation sees the write


def test_mutations_are_recorded_in_order() -> None:
    result = run("{{setvar::a::1}}{{setglobalvar::b::2}}{{deletevar::a}}{{.c = 3}}")
    assert [(m.kind, m.scope, m.key) for m in result.mutations] == [
        ("set", "local", "a"),
        ("set", "global", "b"),
        ("delete", "local", "a"),
        ("set", "local", "c"),
    ]
    assert [m.source_macro for m in result.mutations] == [
        "setvar",
        "setglobalvar",
        "deletevar",
        "setvar",
    ]
