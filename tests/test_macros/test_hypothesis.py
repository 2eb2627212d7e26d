"""Property tests: any text evaluates without raising, within every limit."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine.macros import Limits, MacroContext, default_registry, evaluate
from engine.macros.limits import CHARS_PER_STEP
from engine.macros.nodes import Macro, Scoped, VarExpr
from engine.macros.parser import Parser

LIMITS = Limits(max_depth=6, max_steps=300, max_output_chars=2_000, max_mutations=5)
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

NAMES = st.sampled_from(
    [
        "user",
        "char",
        "if",
        "else",
        "setvar",
        "getvar",
        "addvar",
        "incvar",
        "reverse",
        "trim",
        "space",
        "newline",
        "random",
        "pick",
        "roll",
        "//",
        "original",
        "time",
        "nope",
        "greeting",
        "setglobalvar",
        "getglobalvar",
        "deletevar",
        "hasvar",
        "datetimeformat",
        "outlet",
    ]
)
WORDS = st.sampled_from(
    [
        "a",
        "1",
        "0",
        " ",
        "\n",
        "x.y",
        "::",
        ":",
        "|",
        "}",
        "{",
        "\\",
        "!",
        "==",
        " and ",
        "<USER>",
        "é",
        "'q'",
        "5",
        "hp",
        "{{",
        "}}",
    ]
)


def _macro(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    args = st.lists(children, max_size=3)
    flags = st.sampled_from(["", "#", "/", "!", " ", "~"])
    simple = st.builds(
        lambda f, n, a: "{{" + f + n + "".join("::" + x for x in a) + "}}", flags, NAMES, args
    )
    scoped = st.builds(lambda n, body: "{{" + n + "}}" + body + "{{/" + n + "}}", NAMES, children)
    shorthand = st.builds(
        lambda p, n, op, v: "{{" + p + n + op + v + "}}",
        st.sampled_from([".", "$"]),
        st.sampled_from(["hp", "a.b", "x", "q['k']"]),
        st.sampled_from(["", " = ", " += ", "++", "--", " || ", " ?? ", " == ", " > ", " ||= "]),
        children,
    )
    cond = st.builds(
        lambda c, a, b: "{{if " + c + "}}" + a + "{{else}}" + b + "{{/if}}",
        st.sampled_from(["1", "0", "!x", ".hp > 3", "a == b", "(1 and", "x + 1", "{{user}}"]),
        children,
        children,
    )
    return st.one_of(simple, scoped, shorthand, cond)


TEMPLATES = st.recursive(
    WORDS,
    lambda inner: st.lists(st.one_of(inner, _macro(inner)), max_size=4).map("".join),
    max_leaves=25,
)


def _check(template: str) -> None:
    context = MacroContext(local={"hp": "5", "a": {"b": 1}}, seed=1, chat_id="c")
    result = evaluate(template, context, limits=LIMITS, original="O")
    assert isinstance(result.text, str)
    assert len(result.text) <= LIMITS.max_output_chars
    assert len(result.mutations) <= LIMITS.max_mutations
    # Steps never run away: the budget plus the refused step and output surcharges.
    assert (
        result.steps <= LIMITS.max_steps + 1 + 4 * LIMITS.max_output_chars // CHARS_PER_STEP + 50
    )
    assert all(w.code and w.message for w in result.warnings)
    # The engine's last-resort guard must never be what handled the text.
    assert "macro_internal_error" not in [w.code for w in result.warnings]


@SETTINGS
@given(st.text(max_size=300))
def test_arbitrary_unicode_never_raises(template: str) -> None:
    _check(template)


@SETTINGS
@given(TEMPLATES)
def test_grammar_generated_templates_respect_every_limit(template: str) -> None:
    _check(template)


@SETTINGS
@given(st.text(alphabet=st.characters(blacklist_characters="\\"), max_size=200))
def test_escaped_text_round_trips(plain: str) -> None:
    # Legacy markers and the legacy {{trim}} act even on escaped text (SillyTavern does too).
    assume(not re.search(r"<(user|bot|char|group|charifnotgroup)>|\{\{trim\}\}|\x00", plain, re.I))
    escaped = plain.replace("{", "\\{").replace("}", "\\}")
    assert evaluate(escaped, MacroContext()).text == plain


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=400))
def test_deep_nesting_is_bounded(depth: int) -> None:
    template = "{{reverse::" * depth + "x" + "}}" * depth + "{{if 1}}" * depth + "{{/if}}" * depth
    _check(template)


PIECES = st.sampled_from(
    list("{}:|.$ a1=+!#/\\")
    + ["{{", "}}", "::", "user", "if", "else", "/if", "reverse", "setvar", "x", "//", " = ", "++"]
)


def _shape(items: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Macro):
            args = [(a.start, a.end, _shape(a.items)) for a in item.args]
            out.append(("macro", item.start, item.end, item.name, item.flags, args))
        elif isinstance(item, VarExpr):
            value = None if item.value is None else _shape(item.value.items)
            out.append(("var", item.start, item.end, item.scope, item.name, item.op, value))
        elif isinstance(item, Scoped):
            out.append(
                ("scoped", item.start, item.end, _shape([item.opener]), _shape(item.content.items))
            )
        else:
            out.append(("raw", item.text, item.code))
    return out


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=30).map("".join))
def test_fast_parse_path_matches_the_token_by_token_path(source: str) -> None:
    accept = default_registry().can_accept
    fast = Parser(source, accept).parse()
    reference = Parser(source, accept, fast=False).parse()
    assert _shape(fast) == _shape(reference)
