"""Phases, read-only user text, named limits, warnings, traces, used names and contexts."""

from __future__ import annotations

import copy

import pytest

from engine.macros import Limits, MacroContext, evaluate
from engine.macros.limits import DEFAULT_LIMITS, HARD_MAX_DEPTH
from tests.test_macros.util import codes, ctx, run, text


def test_import_phase_evaluates_nothing() -> None:
    result = run("<USER> {{user}} {{setvar::a::1}}", phase="import")
    assert result.text == "{{user}} {{user}} {{setvar::a::1}}"
    assert codes(result) == ["macro_eval_phase_disallowed"]
    assert result.mutations == ()


def test_commit_phase_runs_reads_but_no_writes() -> None:
    context = ctx(local={"mood": "steady"})
    result = run("{{setvar::mood::happy}}{{.x = 1}}{{getvar::mood}}", context, phase="commit")
    assert result.text == "steady"
    assert codes(result) == ["macro_eval_phase_disallowed"] * 2
    assert result.mutations == () and context.local == {"mood": "steady"}


@pytest.mark.parametrize("phase", ["preview", "dry_run"])
def test_preview_phases_report_writes_as_previews(phase: str) -> None:
    result = run("{{incglobalvar::g}}", ctx(global_vars={"g": 41}), phase=phase)
    assert result.text == "42"
    assert result.staged_mutations == ()
    assert [m.value for m in result.preview_mutations] == [42]
    assert codes(result) == ["macro_preview_side_effect_suppressed"]


def test_assemble_phase_stages_writes() -> None:
    result = run("{{setvar::a::1}}")
    assert [m.key for m in result.staged_mutations] == ["a"]
    assert result.preview_mutations == () and codes(result) == []


@pytest.mark.parametrize(
    "template",
    [
        "{{setvar::x::1}}",
        "{{setglobalvar::x::1}}",
        "{{.x = 1}}",
        "{{$x++}}",
        "{{addvar::x::2}}",
        "{{deletevar::x}}",
        "{{.x ||= 2}}",
    ],
)
def test_read_only_mode_keeps_writes_raw(template: str) -> None:
    context = ctx(local={"x": ""})
    result = run(template + " {{user}} {{getvar::x}}|", context, access="read_only")
    assert result.text == template + " Alice |"
    assert codes(result) == ["macro_write_forbidden"]
    assert result.mutations == () and context.local == {"x": ""}


def test_off_mode_returns_the_text() -> None:
    assert text("{{user}} {{setvar::a::1}}", access="off") == "{{user}} {{setvar::a::1}}"


def test_default_limits_are_named_and_generous() -> None:
    assert Limits() == DEFAULT_LIMITS
    assert DEFAULT_LIMITS.max_depth >= 32 and DEFAULT_LIMITS.max_steps >= 100_000
    assert DEFAULT_LIMITS.max_output_chars >= 1_000_000 and DEFAULT_LIMITS.max_mutations >= 1_000
    assert Limits(max_depth=10_000).clamped().max_depth == HARD_MAX_DEPTH


def test_max_steps() -> None:
    dyn = {"a": "A", "b": "B", "c": "C", "d": "D"}
    result = run("{{a}}{{b}}{{c}}{{d}}", dynamic_macros=dyn, limits=Limits(max_steps=3))
    assert result.text == "AB{{c}}{{d}}"
    assert codes(result) == ["macro_step_limit_exceeded"]


def test_max_output_chars() -> None:
    result = run(
        "{{big}}{{big}}", dynamic_macros={"big": "1234567890"}, limits=Limits(max_output_chars=15)
    )
    assert result.text == "123456789012345"
    assert codes(result) == ["macro_expanded_length_limit_exceeded"]
    big = run("{{space::99999999999}}", limits=Limits(max_output_chars=100))
    assert len(big.text) == 100


def test_max_mutations_refuses_writes_past_the_budget() -> None:
    context = ctx()
    result = run(
        "{{setvar::a::1}}{{setvar::b::2}}{{setvar::c::3}}[{{getvar::c}}]",
        context,
        limits=Limits(max_mutations=2),
    )
    assert result.text == "[]"
    assert codes(result) == ["macro_mutation_limit_exceeded"]
    assert [m.key for m in result.mutations] == ["a", "b"] and "c" not in context.local


def test_max_depth() -> None:
    result = run("{{if 1}}L1{{if 1}}L2{{if 1}}L3{{/if}}{{/if}}{{/if}}", limits=Limits(max_depth=2))
    assert result.text == "L1L2L3"
    assert "macro_depth_limit_exceeded" in codes(result)
    deep = run("{{reverse::{{reverse::{{user}}}}}}", limits=Limits(max_depth=1))
    assert "macro_depth_limit_exceeded" in codes(deep)


def test_growth_through_variables_is_bounded() -> None:
    doubling = "{{.a = x}}" + "{{.a += {{.a}}}}" * 60 + "{{.a}}"
    result = run(doubling, limits=Limits(max_output_chars=10_000))
    assert len(result.text) <= 10_000
    assert "macro_expanded_length_limit_exceeded" in codes(result)


def test_warnings_have_messages_and_positions() -> None:
    result = run("ab {{nope}} {{reverse}}")
    assert [(w.code, w.position) for w in result.warnings] == [
        ("macro_unknown", 3),
        ("macro_arg_arity_invalid", 12),
    ]
    assert all(w.message for w in result.warnings)


def test_traces_and_used_names() -> None:
    result = run("{{user}}{{if 0}}a{{else}}{{char}}{{/if}}{{nope}}{{.x = 1}}", trace=True)
    assert result.used_names == ("user", "if", "char", "setvar")
    assert run("{{$g}}{{.h++}}").used_names == ("getglobalvar", "incvar")
    kinds = [(t.source_kind, t.macro_name, t.selected_branch) for t in result.traces]
    assert ("if", "if", "else") in kinds and ("raw", "nope", "raw") in kinds
    assert all(t.phase == "assemble" for t in result.traces)
    assert run("{{user}}").traces == ()


def test_evaluating_twice_shares_variables_and_deepcopy_forks() -> None:
    context = ctx()
    evaluate("{{setvar::topic::quest}}", context)
    fork = copy.deepcopy(context)
    evaluate("{{setvar::topic::other}}", fork)
    assert evaluate("{{getvar::topic}}", context).text == "quest"
    assert evaluate("{{getvar::topic}}", fork).text == "other"


def test_name_overrides_and_card_replacement_switch() -> None:
    context = ctx()
    context.card.description = "desc of {{char}}"
    assert text("{{user}}/{{char}}", context, user="U2", char="C2") == "U2/C2"
    assert text("[{{description}}]", context, replace_character_card=False) == "[]"
    assert text("{{description}}", context) == "desc of Bob"


def test_post_process_applies_to_every_macro_result() -> None:
    assert text("a{{user}}b{{char}}", post_process=str.upper) == "aALICEbBOB"


def test_non_string_and_unknown_phase_inputs_never_raise() -> None:
    assert evaluate(123, MacroContext()).text == "123"  # type: ignore[arg-type]
    result = evaluate("{{user}}", MacroContext(), phase="later")  # type: ignore[arg-type]
    assert codes(result) == ["macro_eval_phase_disallowed"]


def test_many_large_results_stop_evaluation_early() -> None:
    result = run("{{space::5000}}" * 500, limits=Limits(max_output_chars=20_000))
    assert len(result.text) == 20_000
    assert "macro_expanded_length_limit_exceeded" in codes(result)
    assert "macro_step_limit_exceeded" in codes(result)
    # Work stopped after about OUTPUT_WORK_FACTOR * max_output_chars characters were made.
    assert result.text.count(" ") == 20_000 and "{{space::5000}}" not in result.text[:20_000]


def test_arguments_count_as_documents_for_steps_and_depth() -> None:
    # Core Profile accounting: the document, each macro and each argument is a step.
    context = ctx(local={"x": "X", "y": "Y"})
    result = run("{{getvar::x}}{{getvar::y}}", context, limits=Limits(max_steps=3))
    assert result.text == "X{{getvar::y}}"
    assert codes(result) == ["macro_step_limit_exceeded"]
    deep = run("{{getvar::x}}", context, limits=Limits(max_depth=0))
    assert deep.text == "X" and codes(deep) == ["macro_depth_limit_exceeded"]
