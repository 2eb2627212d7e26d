"""``{{mesExamples}}`` edge cases as SillyTavern 1.18 formats them (reference §15.2:
``parseMesExamples``, the example separator, instruct-mode formatting)."""

from __future__ import annotations

from typing import Any

from engine.macros import CardFields
from tests.test_macros.util import codes, ctx, run, text

EXAMPLES = "<START>\n{{user}}: hi\n{{char}}: hello"


def _examples(settings: dict[str, Any], examples: str = EXAMPLES) -> str:
    return text("{{mesExamples}}", ctx(card=CardFields(mes_examples=examples), settings=settings))


def test_text_completion_heading_is_the_separator_with_its_macros_expanded() -> None:
    """The heading outside Chat Completion and instruct is ``substituteParams(separator)``."""
    textgen = {"main_api": "textgenerationwebui"}
    assert _examples(textgen) == "***\nAlice: hi\nBob: hello\n"
    custom = {**textgen, "context": {"example_separator": "This is how {{char}} should talk"}}
    assert _examples(custom) == "This is how Bob should talk\nAlice: hi\nBob: hello\n"


def test_an_empty_or_missing_separator_gives_no_heading() -> None:
    for separator in ("", None, 3):
        settings = {"main_api": "kobold", "context": {"example_separator": separator}}
        assert _examples(settings) == "Alice: hi\nBob: hello\n", separator
    assert _examples({"main_api": "kobold", "context": {}}) == "Alice: hi\nBob: hello\n"


def test_start_markers_split_blocks_in_any_case_and_empty_examples_give_nothing() -> None:
    assert _examples({}, "<START>") == ""
    assert _examples({}, "   ") == ""
    assert _examples({}, "{{user}}: a\n<start>\n{{char}}: b") == (
        "<START>\nAlice: a\n<START>\nBob: b\n"
    )
    # Only an exact leading '<START>' counts as the first marker: a lower-case one opens an
    # empty block after the one SillyTavern adds.
    assert _examples({}, "<start>\n{{user}}: a") == "<START>\n\n<START>\nAlice: a\n"


def test_instruct_mode_wraps_each_turn_in_the_instruct_sequences() -> None:
    """Instruct mode on and not Chat Completion: ``formatInstructModeExamples``."""
    instruct = {
        "enabled": True,
        "input_sequence": "[INST] {{name}}",
        "output_sequence": "[OUT]",
        "wrap": True,
        "macro": True,
        "names_behavior": "always",
    }
    settings = {"main_api": "textgenerationwebui", "instruct": instruct}
    result = run("{{mesExamples}}", ctx(card=CardFields(mes_examples=EXAMPLES), settings=settings))
    assert result.text == "***\n[INST] Alice\nAlice: hi\n[OUT]\nBob: hello\n"
    assert codes(result) == []
    forced = {**instruct, "names_behavior": "force", "wrap": False, "input_suffix": "</s>"}
    assert _examples({**settings, "instruct": forced}) == (
        "***\n[INST] AliceAlice: hi</s>[OUT]hello"
    )
    skipped = {**instruct, "skip_examples": True}
    assert _examples({**settings, "instruct": skipped}) == "***\nAlice: hi\nBob: hello\n"
    # Chat Completion never applies instruct formatting.
    assert _examples({"main_api": "openai", "instruct": instruct}) == (
        "<START>\nAlice: hi\nBob: hello\n"
    )
