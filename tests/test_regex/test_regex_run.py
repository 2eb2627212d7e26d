"""Running regex scripts: eligibility, replacement quirks, macros, order and the timeout."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from engine.formats.regex_scripts import RegexScript, parse_regex_script, parse_regex_scripts
from engine.prompt.regex_run import (
    REGEX_TIMEOUT_S,
    apply_scripts,
    lint_script,
    run_script,
    sanitize_regex_macro,
    script_is_eligible,
)


def script(**fields: Any) -> RegexScript:
    base: dict[str, Any] = {"scriptName": "s", "findRegex": "/x/g", "placement": [1, 2]}
    return parse_regex_script({**base, **fields}, source="test")


class Macros:
    """A tiny macro renderer: {{user}} -> Bob, {{char}} -> a.b; records escaping use."""

    values = {"{{user}}": "Bob", "{{char}}": "a.b"}

    def __call__(self, text: str, /, *, escape: Callable[[str], str] | None = None) -> str:
        for key, value in self.values.items():
            text = text.replace(key, escape(value) if escape else value)
        return text


def test_replacement_quirks() -> None:
    # $N past the groups reads JS's extra arguments: the offset (0 is falsy), then the input.
    assert run_script(script(findRegex="/b/", replaceString="[$1|$2]"), "ab").text == "a[1|ab]"
    assert run_script(script(findRegex="/a/", replaceString="[$1]"), "ab").text == "[]b"
    # offsets are counted in UTF-16 code units, as in JS
    assert run_script(script(findRegex="/b/", replaceString="$1"), "😀b").text == "😀2"
    # $&, $$, $` and $' are literal; {{match}} is $0 in any case
    rs = "$&$$$`$'{{MATCH}}"
    assert run_script(script(findRegex="/b/", replaceString=rs), "abc").text == "a$&$$$`$'bc"
    # unknown group names and non-participating groups give ""
    run = run_script(script(findRegex="/(?<n>a)|c/g", replaceString="<$<n>$<zz>>"), "ac")
    assert run.text == "<a><>"
    # Python template syntax means nothing
    assert run_script(script(findRegex="/(a)/", replaceString=r"\1\g<1>\n"), "a").text == (
        r"\1\g<1>\n"
    )


def test_where_st_itself_throws_the_script_is_skipped() -> None:
    # $N naming the named-groups object: JS cannot turn that object into text.
    run = run_script(script(findRegex="/(?<n>a)/", replaceString="[$4]"), "ka")
    assert (run.text, [w.code for w in run.warnings]) == ("ka", ["script_error"])
    # the offset is a number: trimming it calls replaceAll on a number in ST
    run = run_script(script(findRegex="/a/", replaceString="$1", trimStrings=["x"]), "ka")
    assert (run.text, [w.code for w in run.warnings]) == ("ka", ["script_error"])
    # ...unless the offset is 0 (falsy, so it is never trimmed)
    run = run_script(script(findRegex="/a/", replaceString="[$1]", trimStrings=["x"]), "ak")
    assert (run.text, run.warnings) == ("[]k", ())


def test_trim_strings_apply_to_captures_only() -> None:
    s = script(findRegex="/(\\w+)/", replaceString="trim:{{match}}/$1", trimStrings=["i", "m"])
    assert run_script(s, "mimic").text == "trim:c/c"


def test_trim_strings_and_replacement_render_macros() -> None:
    s = script(findRegex="/(hi Bob)/", replaceString="{{user}}: $1", trimStrings=["{{user}}"])
    assert run_script(s, "hi Bob", render_macros=Macros()).text == "Bob: hi "


def test_macros_render_after_assembly_including_captured_text() -> None:
    s = script(findRegex="/\\[(.*)\\]/", replaceString="$1")
    assert run_script(s, "[{{user}}]", render_macros=Macros()).text == "Bob"


def test_substitute_regex_modes() -> None:
    raw = script(findRegex="/{{char}}/g", substituteRegex=1, replaceString="X")
    escaped = script(findRegex="/{{char}}/g", substituteRegex=2, replaceString="X")
    none = script(findRegex="/{{char}}/g", substituteRegex=0, replaceString="X")
    macros = Macros()
    assert run_script(raw, "a.b axb", render_macros=macros).text == "X X"  # . is a wildcard
    assert run_script(escaped, "a.b axb", render_macros=macros).text == "X axb"
    # without substitution the braces are literal text (Annex B), so "{{char}}" itself matches
    assert run_script(none, "a.b {{char}}", render_macros=macros).text == "a.b X"
    assert sanitize_regex_macro("a.b\n(c)") == "a\\.b\\n\\(c\\)"


@pytest.mark.parametrize(
    ("flags", "channel", "expected"),
    [
        ({}, "store", True),
        ({}, "display", False),
        ({}, "prompt", False),
        ({"markdownOnly": True}, "display", True),
        ({"markdownOnly": True}, "store", False),
        ({"promptOnly": True}, "prompt", True),
        ({"promptOnly": True}, "display", False),
        ({"markdownOnly": True, "promptOnly": True}, "prompt", True),
        ({"markdownOnly": True, "promptOnly": True}, "display", True),
        ({"markdownOnly": True, "promptOnly": True}, "store", False),
        ({"runOnEdit": False}, "edit", False),
        ({"runOnEdit": True}, "edit", True),
        ({"disabled": True}, "store", False),
    ],
)
def test_channels(flags: dict[str, Any], channel: Any, expected: bool) -> None:
    assert script_is_eligible(script(**flags), placement=1, channel=channel) is expected


@pytest.mark.parametrize(
    ("min_depth", "max_depth", "depth", "expected"),
    [
        (None, None, 50, True),
        (2, None, 1, False),
        (2, None, 2, True),
        (None, 3, 4, False),
        (None, 3, 3, True),
        (-2, None, -1, True),  # minDepth below -1 is ignored
        (None, -1, 5, True),  # maxDepth below 0 is ignored
        (5, 1, None, True),  # no depth: no depth checks
        ("", "", 9, True),
    ],
)
def test_depth_range(min_depth: Any, max_depth: Any, depth: int | None, expected: bool) -> None:
    s = script(minDepth=min_depth, maxDepth=max_depth, promptOnly=True)
    assert script_is_eligible(s, placement=2, channel="prompt", depth=depth) is expected


def test_placement_and_order() -> None:
    scripts = [
        script(findRegex="/a/g", replaceString="b", placement=[1]),  # global
        script(findRegex="/b/g", replaceString="c", placement=[1, 2]),  # preset
        script(findRegex="/c/g", replaceString="d", placement=[5]),  # character, WI only
    ]
    assert apply_scripts("a", scripts, placement=1, channel="store").text == "c"
    assert apply_scripts("a", scripts, placement=2, channel="store").text == "a"
    assert apply_scripts("c", scripts, placement=5, channel="store").text == "d"
    reordered = [scripts[1], scripts[0]]
    assert apply_scripts("a", reordered, placement=1, channel="store").text == "b"


def test_catastrophic_pattern_from_an_imported_file_cannot_stall() -> None:
    """`(a+)+$` on "a"*40 + "!": flagged on import, and running it ends (no match)."""
    data = json.dumps([{"scriptName": "evil", "findRegex": "/(a+)+$/", "placement": [1]}])
    (bad,) = parse_regex_scripts(data.encode(), source="evil.json")
    assert [(w.code, w.script_name) for w in lint_script(bad)] == [("backtracking_risk", "evil")]
    run = apply_scripts("a" * 40 + "!", [bad], placement=1, channel="store")
    # the `regex` engine rejects this one quickly; a pattern it cannot solve times out (below)
    assert run.text == "a" * 40 + "!"
    assert run.warnings == ()


@pytest.mark.parametrize(
    ("find", "codes"),
    [
        ("/(a*b)*c/", ["backtracking_risk"]),
        ("/(?:\\w+\\s?)+$/", ["backtracking_risk"]),
        ("/(a{2,})*/", ["backtracking_risk"]),
        ("/(a|b)+/", []),
        ("/(a{2})+/", []),
        ("/\\(a+\\)+/", []),
        ("/[(a+)]+/", []),
        ("/(?i)a/", ["invalid_regex"]),
        ("", []),
    ],
)
def test_lint(find: str, codes: list[str]) -> None:
    assert [w.code for w in lint_script(script(findRegex=find))] == codes


def test_pattern_that_exhausts_the_timeout_is_skipped_with_a_warning() -> None:
    # `regex` has no shortcut for this one: it backtracks until the timeout stops it.
    bad = script(findRegex="/(a|aa)+$/", replaceString="X", scriptName="evil")
    after = script(findRegex="/!/", replaceString="?")
    run = apply_scripts("a" * 40 + "!", [bad, after], placement=1, channel="store")
    assert run.text == "a" * 40 + "?"  # the next script still ran
    assert [(w.code, w.script_name) for w in run.warnings] == [("timeout", "evil")]
    assert "REGEX_TIMEOUT_S" in run.warnings[0].message
    assert 0 < REGEX_TIMEOUT_S <= 1


def test_explicit_timeout_is_honoured() -> None:
    bad = script(findRegex="/(a|a)+$/")
    run = run_script(bad, "a" * 30 + "!", timeout_s=0.01)
    assert [w.code for w in run.warnings] == ["timeout"]


def test_invalid_pattern_is_inert_with_a_warning() -> None:
    run = run_script(script(findRegex="/(?i)x/g", scriptName="bad"), "x")
    assert run.text == "x"
    assert [w.code for w in run.warnings] == ["invalid_regex"]


def test_noops() -> None:
    assert run_script(script(findRegex=""), "x").text == "x"
    assert run_script(script(), "").text == ""
    assert run_script(script(disabled=True), "x").text == "x"
