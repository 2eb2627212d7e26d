"""Lexing, parsing and the structural constructs: one test per construct."""

from __future__ import annotations

from engine.macros import Limits, parse
from engine.macros.limits import PARSE_NESTING_LIMIT
from engine.macros.nodes import Macro, RawMacro, Scoped, VarExpr
from tests.test_macros.util import codes, run, text


def test_names_are_case_insensitive_and_ascii() -> None:
    assert text("{{USER}} {{uSeR}} {{ user }} {{\nuser\n}}") == "Alice Alice Alice Alice"
    assert text("{{ñ}} {{ 123 }} {{-x}} {{§}}") == "{{ñ}} {{ 123 }} {{-x}} {{§}}"


def test_flags_are_parsed_and_ignored_except_close_and_preserve() -> None:
    assert text("{{!user}} {{?user}} {{~user}} {{>user}} {{ ! ? user}}") == " ".join(["Alice"] * 5)
    template = parse("{{#if 1}} x {{/if}}")
    block = template.items[0]
    assert isinstance(block, Scoped) and block.opener.preserve


def test_argument_forms() -> None:
    assert text("{{reverse::abc}}|{{reverse:abc}}|{{reverse abc}}") == "cba|cba|cba"
    assert text("{{ reverse :: x y }}") == "y x"
    assert text("[{{reverse::}}]") == "[]"
    assert text("{{reverse:}}") == "{{reverse:}}"


def test_double_colon_splits_and_single_colon_is_part_of_an_argument() -> None:
    result = run("{{setvar::a:b::c}}{{getvar::a:b}}")
    assert result.text == "c"
    assert result.mutations[0].key == "a:b"


def test_nesting_evaluates_inside_out_left_to_right() -> None:
    assert text("{{reverse::{{user}}-{{char}}}}") == "boB-ecilA"
    assert text("{{setvar::n::0}}{{reverse::{{incvar::n}}{{incvar::n}}{{incvar::n}}}}") == "321"
    assert text("{{setvar::w::hp}}{{setvar::{{getvar::w}}::42}}{{getvar::hp}}") == "42"


def test_macro_output_is_never_rescanned() -> None:
    result = run("{{getvar::t}}", _with(t="{{user}}"))
    assert result.text == "{{user}}"


def test_braces_around_macros() -> None:
    assert text("{ {user} } {{{user}}} {{{{user}}}}") == "{ {user} } {Alice} {{Alice}}"
    assert text("}} {{char}} }}") == "}} Bob }}"


def test_unterminated_macros_are_text_and_keep_complete_nested_macros() -> None:
    assert text("Hello {{user") == "Hello {{user"
    assert text("Hello {{user {{char}}") == "Hello {{user Bob"
    assert text("Hello {{user} bye") == "Hello {{user} bye"
    assert text("abc {{") == "abc {{"


def test_first_double_brace_closes_the_innermost_macro() -> None:
    context = _with()
    assert text('{{setvar::o::{"a":1}}}', context) == "}"
    assert context.local == {"o": '{"a":1'}


def test_scoped_blocks_pair_and_nest() -> None:
    assert text("{{reverse}} abc {{/reverse}}") == "cba"
    assert text("{{reverse}}ab{{reverse}}cd{{/reverse}}ef{{/reverse}}") == "fecdba"
    assert text("{{setvar::x}}abc{{/setvar::junk}}{{getvar::x}}") == "abc"


def test_unmatched_tags() -> None:
    result = run("text {{/foo}}")
    assert result.text == "text {{/foo}}"
    assert codes(result) == ["macro_unmatched_closing_block"]
    assert text("{{if 1}}{{if 1}}x{{/if}}") == "{{if 1}}x"


def test_a_stray_closing_if_without_any_if_stays_text_and_the_rest_evaluates() -> None:
    result = run("text{{/if}} more {{user}}")
    assert result.text == "text{{/if}} more Alice"
    assert codes(result) == ["macro_unmatched_closing_block"]
    assert text("{{#if 1}}x{{/if}} {{user}}") == "x Alice"


def test_comments() -> None:
    assert text("A{{// a comment}}B{{//no space}}C{{// line1\nline2}}D{{comment::x}}E") == "ABCDE"
    assert text("[{{//}}]") == "[]"


def test_escapes() -> None:
    assert text("\\{\\{user\\}\\} {{reverse::\\}}") == "{{user}} \\"


def test_else_outside_if_disappears() -> None:
    assert text("a{{else}}b") == "ab"
    assert text("{{reverse::a{{else}}b}}") == "b\x00\x1fESLE\x1f\x00a"


def test_variable_shorthand_parses_names_paths_and_operators() -> None:
    items = parse("{{.a = 1}}{{$b++}}{{ . c }}{{.d.e['f g'] += 2}}{{.my-var--5}}").items
    exprs = [item for item in items if isinstance(item, VarExpr)]
    assert [(e.scope, e.name, e.op) for e in exprs] == [
        ("local", "a", "="),
        ("global", "b", "++"),
        ("local", "c", "get"),
        ("local", "d.e['f g']", "+="),
        ("local", "my-var--5", "get"),
    ]
    assert text("{{.}} {{.1x}} {{.x ++ 5}}") == " {{.1x}} {{.x ++ 5}}"


def test_nodes_carry_positions() -> None:
    template = parse("ab{{user}}cd{{if 1}}x{{/if}}")
    macro = template.items[1]
    block = template.items[3]
    assert isinstance(macro, Macro) and (macro.start, macro.end) == (2, 10)
    assert isinstance(block, Scoped) and (block.start, block.end) == (12, 28)
    assert block.content.text == "x"
    result = run("ab {{nope}}")
    assert result.warnings[0].position == 3


def test_parsed_templates_are_cached() -> None:
    assert parse("{{user}} cache probe") is parse("{{user}} cache probe")


def test_nesting_beyond_the_parse_limit_is_text() -> None:
    depth = PARSE_NESTING_LIMIT + 5
    deep = "{{reverse::" * depth + "x" + "}}" * depth
    result = run(deep, limits=Limits(max_depth=10))
    assert "macro_depth_limit_exceeded" in codes(result) or "macro_parse_failed" in codes(result)
    assert isinstance(parse(deep).items[0], Macro | str | RawMacro)


def _with(**local: str):  # type: ignore[no-untyped-def]
    from tests.test_macros.util import ctx

    return ctx(local=dict(local))


def test_many_blocks_and_arguments_parse_in_one_pass() -> None:
    many = "{{if 1}}a{{else}}b{{/if}}" * 3000
    items = parse(many).items
    assert len(items) == 3000 and all(isinstance(item, Scoped) for item in items)
    assert text(many) == "a" * 3000
    wide = "{{random::" + "::".join("{{user}}" for _ in range(3000)) + "}}"
    macro = parse(wide).items[0]
    assert isinstance(macro, Macro) and len(macro.args) == 3000
    assert all(len(arg.items) == 1 for arg in macro.args)


def test_thousands_of_unclosed_blocks_pair_in_one_pass() -> None:
    hostile = "{{if x}}" * 5000 + "{{/if}}"
    result = run(hostile)
    # Only the last opener has a partner (its block is empty); the others stay as written.
    assert result.text == "{{if x}}" * 4999
    assert set(codes(result)) == {"macro_scoped_block_unclosed"}


def test_text_without_macro_syntax_is_handed_back_unparsed() -> None:
    from engine.macros.cache import DEFAULT_CACHE

    plain = "She nods < twice > and walks off. cache-skip probe"
    before = DEFAULT_CACHE.misses + DEFAULT_CACHE.hits
    assert run(plain).text == plain
    assert DEFAULT_CACHE.misses + DEFAULT_CACHE.hits == before  # never parsed
    # Each thing that evaluation would change still takes the full path.
    assert text("Hi <USER>.") == "Hi Alice."
    assert text(r"a \{ b") == "a { b"
    assert text("x\n{{trim}}") == "x"
    long = "z" * 50
    assert text(long, limits=Limits(max_output_chars=10)) != long
