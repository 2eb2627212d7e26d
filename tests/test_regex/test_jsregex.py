"""JS regex literal parsing and JS -> Python translation (the reference's table, case by case)."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.prompt.jsregex import (
    MAX_PATTERN_CHARS,
    REGEX_CACHE_SIZE,
    JsRegexError,
    compile_js,
    js_replace,
    parse_script_regex,
)


def finds(pattern: str, flags: str, text: str) -> str | None:
    found = compile_js(pattern, flags).pattern.search(text, timeout=1.0)
    return None if found is None else str(found.group(0))


@pytest.mark.parametrize(
    ("literal", "source", "flags"),
    [
        ("/foo/bar/g", "foo/bar", "g"),  # greedy body: inner slashes need no escaping
        ("hello", "hello", ""),  # bare pattern
        ("/abc", "/abc", ""),  # no closing slash: the whole text is the pattern
        ("/foo/y", "/foo/y", ""),  # flag outside ST's set: whole input as a pattern
        ("/a/gg", "/a/gg", ""),  # repeated flag: the same
        ("/a/G", "/a/G", ""),  # upper-case G is not in the set
        ("/a.c/s", "a.c", "s"),
        ("/x/gim", "x", "gim"),
        ("\n/x/g", "x", "g"),  # the first non-empty line is parsed
        ("/x/g\nmore", "x", "g"),
    ],
)
def test_script_literal_parsing(literal: str, source: str, flags: str) -> None:
    compiled = parse_script_regex(literal)
    assert compiled is not None
    assert (compiled.source, compiled.flags) == (source, flags)


@pytest.mark.parametrize("literal", ["", "\n", "/foo/x", "/foo/U", "/(/g", "/a**/"])
def test_inert_literals(literal: str) -> None:
    assert parse_script_regex(literal) is None


@pytest.mark.parametrize(
    ("pattern", "flags", "text", "expected"),
    [
        (r"\d+", "", "a٣٣12", "12"),  # JS \d is ASCII
        (r"\w+", "", "ééab_1", "ab_1"),  # JS \w is ASCII
        (r"\bfoo\b", "", "éfooé", "foo"),  # ASCII word boundaries: é is not a word char
        (r"\bfoo\b", "", "xfoo", None),
        (r"[\w-]+", "", "é-ab-", "-ab-"),
        (r"[^a\W]+", "", "abcd", "bcd"),
        (r"\s", "", "\x1c", None),  # Python \s has \x1c, JS does not
        (r"\s", "", "\ufeff", "\ufeff"),  # JS \s has the BOM
        (r"a.c", "", "a\rc", None),  # JS . excludes \r and \u2028 too
        (r"a.c", "", "a\u2028c", None),
        (r"a.c", "s", "a\nc", "a\nc"),
        (r"abc$", "", "abc\n", None),  # Python $ would match before a final newline
        (r"^b", "m", "a\u2028b", "b"),  # JS line terminators for ^ with m
        (r"^b", "", "a\nb", None),
        (r"(a)?b\1", "", "b", "b"),  # a back-reference to an unmatched group matches ""
        (r"(?<x>a)?b\k<x>", "", "b", "b"),
        (r"(?<x>a)\k<x>", "", "aa", "aa"),
        (r"a{,3}", "", "a{,3}", "a{,3}"),  # not a quantifier: literal
        (r"a{2}", "", "aaa", "aa"),
        (r"[]", "", "abc", None),  # matches nothing
        (r"[^]", "", "\n", "\n"),  # matches anything
        (r"\cJ", "", "\n", "\n"),
        (r"\0", "", "\x00", "\x00"),
        (r"\12", "", "\n", "\n"),  # legacy octal when there are fewer than 12 groups
        (r"\8", "", "8", "8"),
        (r"\a\e\z", "", "aez", "aez"),  # identity escapes without u
        (r"(?<=a+)b", "", "aaab", "b"),  # variable-width look-behind
        (r"[a-z]+", "i", "ABC", "ABC"),
        (r"\w", "i", "ſ", None),  # without u, JS \w never folds ſ
        (r"\u{1F600}", "u", "x😀", "😀"),
        (r"\p{L}+", "u", "1éa", "éa"),
        (r"[\b]", "", "\b", "\b"),
        (r"a\/b", "", "a/b", "a/b"),
        (r"[[&&]]", "", "&]", "&]"),  # Python set-operation syntax is plain text in JS
        (r"x*", "", "abc", ""),
        (r"[a-z]", "i", "\u017f", None),  # without u, JS never folds ſ or K into ASCII
        (r"k", "i", "\u212a", None),
        (r"[\u017f]", "i", "s", None),
        (r"[^s]", "i", "\u017f", "\u017f"),
        (r"K", "i", "k", "k"),
        (r"[a-z]", "iu", "\u017f", "\u017f"),  # with u it does
        (r"(a\1)", "", "aa", "a"),  # a reference inside its own group is always empty
    ],
)
def test_translation_matches_js(pattern: str, flags: str, text: str, expected: str | None) -> None:
    assert finds(pattern, flags, text) == expected


@pytest.mark.parametrize(
    ("pattern", "flags"),
    [
        ("(?i)a", ""),
        ("(?#c)a", ""),
        ("(?P<n>a)", ""),
        ("(?>a)", ""),
        ("a*+", ""),
        ("*a", ""),
        ("a{2,1}", ""),
        ("(a", ""),
        ("a)", ""),
        ("[a", ""),
        ("[z-a]", ""),
        ("\\", ""),
        ("(?<n>a)(?<n>b)", ""),
        ("\\k<nope>(?<n>a)", ""),
        ("a{", "u"),
        ("\\q", "u"),
        ("\\2(a)", "u"),
        ("a", "x"),
        ("a", "gg"),
        ("a", "d"),
        ("(?<=a)*", ""),  # a look-behind can never be repeated
        ("(?=a)*", "u"),  # a look-ahead only without u
        ("[\\d-z]", "u"),
        ("\\-", "u"),
    ],
)
def test_js_syntax_errors_are_rejected(pattern: str, flags: str) -> None:
    with pytest.raises(JsRegexError):
        compile_js(pattern, flags)


def test_lookahead_may_be_repeated_without_u() -> None:
    assert finds("(?=a)*a", "", "a") == "a"


def test_js_replace_steps_past_empty_matches_like_js() -> None:
    def mark(match: Any) -> str:
        return f"<{match.group(0)}>"

    # Python's sub would find "b" right after the empty match at 1; JS moves on.
    assert js_replace(compile_js("[ab]*?", "g"), "xb", mark, timeout_s=1) == "<>x<>b<>"
    assert js_replace(compile_js("x*", "g"), "abxd", mark, timeout_s=1) == "<>a<>b<x><>d<>"
    assert js_replace(compile_js("b", ""), "abcb", mark, timeout_s=1) == "a<b>cb"


def test_named_groups_map_to_numbers() -> None:
    compiled = compile_js(r"(?<first>a)(b)(?<$third>c)", "")
    assert compiled.group_count == 3
    assert dict(compiled.group_names) == {"first": 1, "$third": 3}


def test_pattern_length_limit() -> None:
    with pytest.raises(JsRegexError, match="MAX_PATTERN_CHARS"):
        compile_js("a" * (MAX_PATTERN_CHARS + 1))
    assert compile_js("a" * MAX_PATTERN_CHARS).group_count == 0


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet="ab()[]{}|*+?^$.\\/-,:<>=!kpPdwsbBcux0123456789ũ😀", max_size=30)
    | st.text(max_size=30),
    st.sampled_from(["", "g", "i", "m", "s", "u", "gimsu", "y", "iu"]),
)
def test_fuzz_compile_only_raises_js_regex_error(pattern: str, flags: str) -> None:
    try:
        compiled = compile_js(pattern, flags)
    except JsRegexError:
        return
    with contextlib.suppress(TimeoutError):  # a pathological pattern may time out: that is fine
        compiled.pattern.search("ab(c)[😀]\n12", timeout=0.05)


def test_compiled_patterns_are_cached_up_to_the_limit() -> None:
    from engine.prompt import jsregex

    assert compile_js("cached", "g") is compile_js("cached", "g")
    assert jsregex._compile_cached.cache_info().maxsize == REGEX_CACHE_SIZE == 1000
