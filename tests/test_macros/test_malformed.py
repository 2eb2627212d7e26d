"""Malformed macro text behaves as SillyTavern 1.18's parser specifies.

The property tests derive malformed variants from the conformance vectors (SillyTavern's own
upstream specs, the oracle samples and the Core Profile file): they inject stray closing tags,
unterminated openers and unbalanced scoped blocks into a vector's template and check the result
against the vector's expected text. Each property names the section of
``reference/sillytavern-macros.md`` it comes from.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from engine.macros.envjson import run_case
from engine.macros.processing import preprocess
from tests.conformance.macros.test_vectors import DEVIATIONS
from tests.conftest import CONFORMANCE
from tests.test_macros.util import codes, run, text

VECTORS_DIR = CONFORMANCE
VECTOR_FILES = ("st_upstream_macro_tests.jsonl", "st_language.jsonl", "th_core_profile.jsonl")
#: Outputs that depend on a macro's offset or on chance, which an injected tag would shift.
_POSITIONAL = re.compile(r"pick|random|roll", re.IGNORECASE)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _vectors() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in VECTOR_FILES:
        with (VECTORS_DIR / name).open(encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                case = json.loads(line)
                env = case["env"]
                if case["check"] != "full" or "limits" in env:
                    continue
                if env.get("phase") in ("import", "commit"):  # nothing is evaluated there
                    continue
                if _POSITIONAL.search(case["template"]):
                    continue
                deviation = DEVIATIONS.get(case["id"])
                case["text"] = deviation[1] if deviation else case["expect"]["text"]
                out.append(case)
    return out


VECTORS = _vectors()
CLOSER_NAMES = ["if", "setvar", "reverse", "trim", "getvar", "else", "user", "noSuchMacro"]


def _mentions(template: str, name: str) -> bool:
    """Whether a tag of ``name`` (opener or closer, any case) may occur in ``template``."""
    return re.search(rf"{re.escape(name)}", template, re.IGNORECASE) is not None


def _open_at_end(out: dict[str, Any]) -> bool:
    """Whether the template ends inside a macro that is never closed: a tag appended there
    belongs to that macro (§2: characters after its name are dropped up to the next ``}}``)."""
    return "macro_parse_failed" in out["warnings"]


def _stores(out: dict[str, Any]) -> str:
    return json.dumps([out["local"], out["global"], out["mutations"]], sort_keys=True)


def _run(template: str, case: dict[str, Any]) -> dict[str, Any]:
    return run_case({"template": template, "env": case["env"]})


@st.composite
def _closer(draw: st.DrawFn) -> str:
    name = draw(st.sampled_from(CLOSER_NAMES))
    cased = "".join(draw(st.sampled_from([c.lower(), c.upper()])) for c in name)
    form = draw(st.sampled_from(["{{/%s}}", "{{ / %s }}", "{{/%s::junk}}", "{{~/%s}}"]))
    return form % cased


# -- concrete cases from the issue ------------------------------------------------------------


def test_stray_closer_keeps_it_as_text_and_evaluates_the_macros_before_it() -> None:
    """§8.1: an unmatched closing tag stays raw; the rest of the text is evaluated."""
    result = run("{{weekday}}x{{/if}}")
    assert result.text == "Wednesdayx{{/if}}"
    assert codes(result) == ["macro_unmatched_closing_block"]
    assert result.warnings[0].position == len("{{weekday}}x")
    assert text("text{{/if}} more {{user}}") == "text{{/if}} more Alice"
    assert text("{{user}} {{/IF}} {{setvar::a::1}}{{getvar::a}}") == "Alice {{/IF}} 1"


def test_unterminated_opener_keeps_the_rest_raw_with_a_parse_warning() -> None:
    """§3 and §14: a macro whose ``}}`` never comes is flattened back to text (complete nested
    macros inside it still run), and SillyTavern logs the parse error: the Core Profile code
    ``macro_parse_failed`` with the opener's position."""
    result = run("Hello {{user and more")
    assert result.text == "Hello {{user and more"
    assert codes(result) == ["macro_parse_failed"]
    assert result.warnings[0].position == len("Hello ")
    assert "}}" in result.warnings[0].message
    nested = run("A {{reverse::x {{char}} y")
    assert nested.text == "A {{reverse::x Bob y"
    assert [(w.code, w.position) for w in nested.warnings] == [("macro_parse_failed", 2)]
    shorthand = run("{{user}} {{.x = 1")
    assert shorthand.text == "Alice {{.x = 1"
    assert [(w.code, w.position) for w in shorthand.warnings] == [("macro_parse_failed", 9)]
    # §14: '{{' with no name after it, '{{}}' and '{ {user} }' are plain text, not broken
    # macros: no parse error is logged for them.
    for template in ("abc {{", "{{}}", "{ {user} }", "{{ 123 }}", "x }} y"):
        result = run(template)
        assert result.text == template
        assert "macro_parse_failed" not in codes(result), template


# -- properties derived from the conformance vectors ------------------------------------------


@SETTINGS
@given(case=st.sampled_from(VECTORS), closer=_closer(), at_end=st.booleans())
def test_stray_closer_around_a_vector_is_kept_and_the_rest_evaluates_as_written(
    case: dict[str, Any], closer: str, at_end: bool
) -> None:
    """§8.1 "Unmatched closing tags stay raw" and "Arguments on a closing tag are ignored":
    pairing only looks forward from an opener, so a closing tag before a vector's template (or
    after it, when the template has no tag of that name) has no partner. It is kept as written
    with ``macro_unmatched_closing_block`` at its position, and everything else evaluates as in
    the well-formed template (same text, same variables and writes)."""
    template = case["template"]
    name = re.sub(r"[^A-Za-z]|junk", "", closer)
    assume(not _mentions(template, name))
    # §12: unescaping runs over the whole output, so a '\' just before '{{' would vanish.
    assume(not (at_end and case["text"].endswith("\\")))
    base = _run(template, case)
    assume(not (at_end and _open_at_end(base)))
    variant = template + closer if at_end else closer + template
    out = _run(variant, case)
    assert out["text"] == (case["text"] + closer if at_end else closer + case["text"])
    assert _stores(out) == _stores(base)
    position = len(template) if at_end else 0  # in the text as written
    assert any(
        d["code"] == "macro_unmatched_closing_block" and d["position"] == position
        for d in out["warning_details"]
    ), out["warning_details"]
    assert set(out["warnings"]) - {"macro_unmatched_closing_block"} == set(base["warnings"]) - {
        "macro_unmatched_closing_block"
    }


@SETTINGS
@given(
    case=st.sampled_from(VECTORS),
    closer=_closer(),
    leading=st.booleans(),
    offset=st.integers(min_value=0, max_value=40),
)
def test_stray_closer_inside_a_vectors_outer_text_stays_where_it_was_written(
    case: dict[str, Any], closer: str, leading: bool, offset: int
) -> None:
    """§1 step 4 ("text between items is copied verbatim") with §8.1 ("unmatched closing tags
    stay raw"): a stray closing tag dropped anywhere into the plain text before a vector's
    first macro, or after its last one, comes out at the same place in the vector's expected
    text, and everything around it evaluates as written. (Texts that pre- or post-processing
    rewrites, legacy markers, escapes and ``{{trim}}``, are left out: they are not copied
    verbatim.)"""
    template = case["template"]
    name = re.sub(r"[^A-Za-z]|junk", "", closer)
    assume(not _mentions(template, name) and not _mentions(template, "trim"))
    assume("<" not in template and "\\" not in template)
    base = _run(template, case)
    assume(not _open_at_end(base))
    expected = case["text"]
    if leading:
        first = template.find("{{")
        at = min(offset, first if first >= 0 else len(template))
        out_at = at
    else:
        last = template.rfind("}}")
        plain = len(template) - (last + 2 if last >= 0 else 0)
        at = len(template) - min(offset, plain)
        out_at = len(expected) - (len(template) - at)
    assert expected[out_at:] == template[at:] if not leading else expected[:at] == template[:at]
    out = _run(template[:at] + closer + template[at:], case)
    assert out["text"] == expected[:out_at] + closer + expected[out_at:]
    assert _stores(out) == _stores(base)
    assert any(
        d["code"] == "macro_unmatched_closing_block" and d["position"] == at
        for d in out["warning_details"]
    ), out["warning_details"]


_TAIL = st.text(
    alphabet=st.characters(blacklist_characters="{}\\<|", blacklist_categories=("Cs",)),
    max_size=12,
)


@SETTINGS
@given(
    case=st.sampled_from(VECTORS),
    opener=st.sampled_from(
        ["{{user", "{{reverse::", "{{setvar::x::", "{{ if 1", "{{#trim ", "{{.v = ", "{{// "]
    ),
    tail=_TAIL,
)
def test_unterminated_opener_after_a_vector_keeps_the_rest_raw_with_a_warning(
    case: dict[str, Any], opener: str, tail: str
) -> None:
    """§3 (recovery: "a macro whose ``}}`` was inserted by recovery is flattened back to
    plaintext") and §14 (``Hello {{user`` is unchanged): an opener whose ``}}`` never comes
    keeps the text from that point raw. The vector before it evaluates exactly as written, no
    write inside the broken macro happens, and SillyTavern's parse error is reported as
    ``macro_parse_failed`` at the opener's position."""
    template = case["template"]
    assume(not case["text"].endswith("\\"))  # §12: '\{' would be unescaped
    base = _run(template, case)
    assume(not _open_at_end(base))
    variant = template + opener + tail
    out = _run(variant, case)
    assert out["text"] == case["text"] + opener + tail
    assert _stores(out) == _stores(base)
    position = len(template)  # in the text as written, before legacy syntax is rewritten
    assert any(
        d["code"] == "macro_parse_failed" and d["position"] == position
        for d in out["warning_details"]
    ), out["warning_details"]


@SETTINGS
@given(
    case=st.sampled_from(VECTORS),
    opener=st.sampled_from(["{{if 1}}", "{{setvar::q}}", "{{reverse}}", "{{#getvar}}"]),
)
def test_unclosed_scoped_opener_before_a_vector_is_evaluated_inline(
    case: dict[str, Any], opener: str
) -> None:
    """§8.1 "Unmatched openers are evaluated as ordinary inline macros": a block opener with no
    closing tag anywhere after it is an inline call; with its one argument short it fails arity
    and stays raw (§6), and the vector after it evaluates as written."""
    template = case["template"]
    name = re.sub(r"[^A-Za-z].*", "", opener.strip("{#"))
    assume(not re.search(rf"/\s*{name}", template, re.IGNORECASE))
    base = _run(template, case)
    out = _run(opener + template, case)
    assert out["text"] == opener + case["text"]
    assert _stores(out) == _stores(base)
    assert set(base["warnings"]) <= set(out["warnings"])


@SETTINGS
@given(case=st.sampled_from(VECTORS), extra=st.integers(min_value=1, max_value=3))
def test_extra_closers_after_a_block_around_a_vector_stay_text(
    case: dict[str, Any], extra: int
) -> None:
    """§8.1 pairing ("the first unmatched closing tag with the same name at depth 0") and §7
    (``#`` keeps scoped content as written): in ``{{#if 1}}T{{/if}}{{/if}}...`` the first
    closer ends the block and the surplus ones have no opener, so they stay text after the
    block's content, which is the vector evaluated as written."""
    template = case["template"]
    assume(not _mentions(template, "if") and not _mentions(template, "else"))
    # A branch is evaluated again as its own document (§1), so its post-processors run twice:
    # leave out escapes and trims, which that second pass could change.
    assume("\\" not in template and not _mentions(template, "trim"))
    base = _run(template, case)
    assume(not _open_at_end(base))
    variant = "{{#if 1}}" + template + "{{/if}}" * (1 + extra)
    out = _run(variant, case)
    assert out["text"] == case["text"] + "{{/if}}" * extra
    assert _stores(out) == _stores(base)
    assert out["warnings"].count("macro_unmatched_closing_block") >= extra


def _console_cases() -> list[tuple[str, dict[str, Any], bool]]:
    """Upstream specs that assert whether SillyTavern logs a ``[Macro] warning``."""
    out = []
    with (VECTORS_DIR / "st_upstream_macro_tests.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            case = json.loads(line)
            for note in case.get("unconverted_assertions", []):
                if note.startswith("expect(<console has [Macro] warning>)"):
                    out.append((case["template"], case["env"], "toBe(True)" in note))
    return out


CONSOLE_CASES = _console_cases()


def test_warnings_come_exactly_where_sillytavern_logs_one() -> None:
    """The upstream specs' console assertions (§1 step 3: lexing and parsing errors are
    logged): a warning for each unterminated macro, none for stray braces that are text."""
    assert len(CONSOLE_CASES) == 20
    assert sum(warns for _, _, warns in CONSOLE_CASES) == 3
    for template, env, warns in CONSOLE_CASES:
        out = run_case({"template": template, "env": env})
        assert bool(out["warnings"]) is warns, (template, out["warnings"])
        if warns:
            assert out["warnings"] == ["macro_parse_failed"], template


def test_warnings_point_into_the_text_as_written_after_legacy_syntax() -> None:
    """Legacy ``{{time_UTC-5}}`` and ``<USER>`` are rewritten into longer macros before
    parsing; a warning after them still names the position the author sees."""
    env = {"user": "Alice", "char": "Bob", "now": "2025-01-01T12:00:00Z", "tz": "UTC"}
    for template in ("{{time_UTC-5}}|<USER>{{/if}}", "<user> and <BOT>: {{/if}}"):
        assert preprocess(template) != template
        out = run_case({"template": template, "env": env})
        (warning,) = [
            d for d in out["warning_details"] if d["code"] == "macro_unmatched_closing_block"
        ]
        assert warning["position"] == template.index("{{/if}}")
        assert out["text"].endswith("{{/if}}")
