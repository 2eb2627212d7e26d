"""The 19 surprising semantics of SillyTavern 1.18's macro engine, each pinned."""

from __future__ import annotations

from engine.macros.randomness import pick_index, string_hash
from tests.test_macros.util import codes, ctx, run, text


def test_01_space_and_single_colon_forms_take_one_argument() -> None:
    assert text("{{if 1::x}}") == "{{if 1::x}}"
    assert text("{{reverse:a::b}}") == "b::a"
    assert text("{{reverse abc def}}") == "fed cba"


def test_02_arguments_are_always_trimmed() -> None:
    assert text("[{{reverse:: abc }}]") == "[cba]"
    context = ctx()
    text("{{setvar::x:: spaced value }}{{#setvar::y}}  kept  {{/setvar}}", context)
    assert context.local == {"x": "spaced value", "y": "  kept  "}


def test_03_nested_macros_run_even_when_the_outer_macro_fails() -> None:
    context = ctx()
    assert text("{{reverse::{{setvar::x::1}}::b}}", context) == "{{reverse::::b}}"
    assert text("{{nope::{{setvar::y::2}}}}", context) == "{{nope::}}"
    assert text("{{// {{setvar::z::3}} }}", context) == ""
    assert context.local == {"x": "1", "y": "2", "z": "3"}


def test_04_a_closer_paired_with_an_opener_that_takes_no_content_keeps_both_raw() -> None:
    assert text("{{user}}x{{/user}}") == "{{user}}x{{/user}}"
    assert text("{{if::1::a}}b{{/if}}") == "{{if::1::a}}b{{/if}}"


def test_05_else_and_nested_if_are_case_sensitive_inside_an_if_block() -> None:
    assert text("{{if 1}}a{{ELSE}}b{{/if}}") == "ab"
    assert text("{{if 0}}a{{Else}}b{{/if}}") == ""
    assert text("{{if 0}}a{{else}}b{{/if}}") == "b"
    # Everything else is case-insensitive.
    assert text("{{REVERSE}}abc{{/reverse}} {{UsEr}}") == "cba Alice"


def test_06_only_empty_false_off_and_zero_are_falsy() -> None:
    template = "".join(f"{{{{if {v}}}}}T{{{{else}}}}F{{{{/if}}}}" for v in ("no", "null", "0.0"))
    assert text(template) == "TTT"
    assert text("{{if {{getvar::s}}}}T{{else}}F{{/if}}", ctx(local={"s": "  "})) == "T"
    assert text("{{if false}}T{{else}}F{{/if}}{{if OFF}}T{{else}}F{{/if}}") == "FF"
    # Registered 0-argument names resolve; dynamic macros and unknown names do not.
    assert text("{{if description}}T{{else}}F{{/if}}") == "F"
    assert text("{{if myDyn}}T{{else}}F{{/if}}", dynamic_macros={"myDyn": ""}) == "T"
    assert text("{{if notamacro}}T{{/if}}") == "T"


def test_07_getters_coerce_and_add_switches_between_number_array_and_text() -> None:
    context = ctx(local={"a": "007", "h": "0x10", "t": "true", "l": '["a"]', "s": "5"})
    out = text(
        "{{getvar::a}} {{getvar::h}} {{incvar::t}} {{addvar::l::b}}{{getvar::l}} "
        "{{addvar::s::abc}}{{getvar::s}}",
        context,
    )
    assert out == '7 16 true1 ["a","b"] 5abc'


def test_08_ordering_comparisons_are_numeric_and_equality_compares_coerced_text() -> None:
    context = ctx(local={"sp": "  12  ", "dot": ".5", "w": "abc"})
    result = run("{{.sp == 12}} {{.dot == 0.5}} {{.w > 1}} {{.w < 1}}", context)
    assert result.text == "true true false false"
    assert codes(result).count("macro_arg_type_invalid") == 2


def test_09_pipes_keep_the_macro_raw() -> None:
    assert text("{{reverse::a|b}}") == "{{reverse::a|b}}"
    assert text("{{reverse::a\\|b}}") == "{{reverse::a\\|b}}"
    assert text("{{// a | b}}") == "{{// a | b}}"


def test_10_characters_that_fail_to_lex_after_a_name_are_dropped() -> None:
    assert text("{{user.name}} {{user!}}") == "Alice Alice"


def test_11_there_are_no_block_comments_and_comments_run_nested_macros() -> None:
    assert text("A{{//}}block{{///}}B") == "AblockB"
    context = ctx()
    text("{{// note {{setvar::seen::yes}} }}", context)
    assert context.local == {"seen": "yes"}


def test_12_unescaping_is_global_and_last_including_macro_output() -> None:
    assert text("\\{\\{user\\}\\} and \\{{user}}") == "{{user}} and \\Alice"
    assert text("{{getvar::v}}", ctx(local={"v": "\\{x\\}"})) == "{x}"


def test_13_scoped_content_is_trimmed_after_evaluation() -> None:
    assert text("[{{if 1}}  {{newline}}x{{space}}  {{/if}}]") == "[x]"
    assert text("{{if 1}}\n    line1\n      line2\n{{/if}}") == "line1\n  line2"


def test_14_trim_removes_only_newlines_around_it_and_escaped_trim_still_trims() -> None:
    assert text("a \n{{trim}}\n b") == "a  b"
    assert text("\\{\\{trim\\}\\}x") == "x"
    assert text("{{trim}}  x  {{/trim}}!") == "x!"


def test_15_original_fires_once_and_stays_raw_without_an_original() -> None:
    assert text("[{{original}}] [{{original}}]", original="O") == "[O] []"
    result = run("[{{original}}]")
    assert result.text == "[{{original}}]"
    assert codes(result) == ["macro_value_missing"]


def test_16_time_offsets_are_case_sensitive_and_large_offsets_are_minutes() -> None:
    assert text("{{time::UTC+2}}|{{time::UTC+30}}|{{time::utc+2}}") == "2:00 PM|12:30 PM|12:00 PM"
    assert text("{{time_UTC-5}}|{{time_utc+2}}") == "7:00 AM|12:00 PM"


def test_17_card_fields_expand_one_level_and_variables_do_not() -> None:
    context = ctx()
    context.card.description = "{{char}} is tall. [{{description}}]"
    context.local["v"] = "{{user}}"
    assert text("{{description}}|{{getvar::v}}", context) == "Bob is tall. []|{{user}}"
    assert text("{{systemPrompt}}").startswith("Write {{char}}'s next reply")


def test_18_unknown_and_failed_macros_print_their_text_with_nested_results() -> None:
    assert text("{{foo::{{user}}}}") == "{{foo::Alice}}"
    assert text("{{char::{{user}}}}") == "{{char::Alice}}"


def test_19_legacy_markers_are_replaced_first_which_shifts_pick_offsets() -> None:
    assert text("<user>{{<USER>}}") == "Alice{{Alice}}"
    items = [str(n) for n in range(40)]
    template = "<USER>{{pick::" + "::".join(items) + "}}"
    chat = string_hash("room")
    # After rewriting, the pick starts at offset 8 ("{{user}}"), not 6; the hash is of the
    # text as given.
    expected = items[pick_index(f"{chat}-{string_hash(template)}-8", len(items))]
    assert text(template, ctx(chat_id="room")) == "Alice" + expected
