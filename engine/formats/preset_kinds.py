"""Telling a Chat Completion preset from the other SillyTavern files people import as one.

SillyTavern keeps several kinds of "preset" side by side: the Chat Completion preset (the
"OpenAI Settings" file with ``prompts`` and ``prompt_order``, the only kind tavernbot plays),
text-completion sampler presets (TextGen WebUI, KoboldAI, NovelAI), instruct and context
templates, system prompts and the Advanced Formatting export that bundles them. Every field of
a Chat Completion preset is optional, so any JSON object used to parse as an empty one and was
stored silently, to play with the default prompts. :func:`refuse_other_kinds` names what such a
file is instead.

Detection is conservative: a file with any Chat Completion key is a Chat Completion preset,
whatever else it holds; another kind is named only when the file has none of those keys and at
least :data:`MIN_SIGNATURE_KEYS` keys that only that kind uses (a world book by its ``entries``
alone; a system prompt, whose keys are generic, only when it has nothing else).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from engine.errors import FormatError

CHAT_COMPLETION_KEYS: Final = frozenset(
    {
        "prompts",
        "prompt_order",
        "openai_max_context",
        "openai_max_tokens",
        "main_prompt",
        "nsfw_prompt",
        "jailbreak_prompt",
        "chat_completion_source",
        "openai_model",
        "temp_openai",
        "freq_pen_openai",
        "pres_pen_openai",
        "top_p_openai",
        "names_in_completion",
        "squash_system_messages",
        "new_chat_prompt",
        "new_example_chat_prompt",
        "continue_nudge_prompt",
        "impersonation_prompt",
        "wi_format",
        "scenario_format",
        "personality_format",
        "assistant_prefill",
        "stream_openai",
        "bias_preset_selected",
    }
)
"""Keys only a Chat Completion preset has: one of them makes the file one."""

MIN_SIGNATURE_KEYS: Final = 2
"""How many keys of another kind's own vocabulary a file needs before it is named that kind
(every real file of those kinds has many more); fewer, and it is read as a preset."""

_EXPECTED: Final = (
    "not a Chat Completion preset; import the Chat Completion preset instead (the file "
    "SillyTavern saves under 'OpenAI Settings', with prompts and prompt_order)"
)

# (what the file is, the keys only that kind uses, how many of them it takes), in this order.
_SIGNATURES: Final[tuple[tuple[str, frozenset[str], int], ...]] = (
    (
        "a SillyTavern Advanced Formatting export (instruct and context templates)",
        frozenset({"instruct", "context", "sysprompt", "reasoning", "preamble"}),
        MIN_SIGNATURE_KEYS,
    ),
    (
        "a SillyTavern instruct template",
        frozenset(
            {
                "input_sequence",
                "output_sequence",
                "system_sequence",
                "stop_sequence",
                "separator_sequence",
                "first_output_sequence",
                "last_output_sequence",
                "first_input_sequence",
                "last_input_sequence",
                "last_system_sequence",
                "system_sequence_prefix",
                "system_sequence_suffix",
                "input_suffix",
                "output_suffix",
                "system_suffix",
                "user_alignment_message",
                "system_same_as_user",
                "activation_regex",
                "names_force_groups",
                "skip_examples",
            }
        ),
        MIN_SIGNATURE_KEYS,
    ),
    (
        "a SillyTavern context template",
        frozenset(
            {
                "story_string",
                "example_separator",
                "chat_start",
                "story_string_position",
                "story_string_depth",
                "story_string_role",
                "always_force_name2",
                "trim_sentences",
                "single_line",
                "use_stop_strings",
                "names_as_stop_strings",
            }
        ),
        MIN_SIGNATURE_KEYS,
    ),
    (
        "a SillyTavern NovelAI sampler preset (text completion)",
        frozenset(
            {
                "tail_free_sampling",
                "repetition_penalty_range",
                "repetition_penalty_slope",
                "repetition_penalty_frequency",
                "repetition_penalty_presence",
                "phrase_rep_pen",
                "cfg_scale",
                "mirostat_lr",
                "math1_temp",
                "max_context",
                "order",
            }
        ),
        MIN_SIGNATURE_KEYS,
    ),
    (
        "a SillyTavern text-completion sampler preset (TextGen WebUI or KoboldAI)",
        frozenset(
            {
                "temp",
                "temperature_last",
                "rep_pen",
                "rep_pen_range",
                "rep_pen_slope",
                "rep_pen_decay",
                "sampler_order",
                "sampler_priority",
                "samplers",
                "samplers_priorities",
                "tfs",
                "typical",
                "typical_p",
                "epsilon_cutoff",
                "eta_cutoff",
                "genamt",
                "max_length",
                "mirostat",
                "mirostat_mode",
                "mirostat_eta",
                "dynatemp",
                "smoothing_factor",
                "dry_multiplier",
                "dry_base",
                "xtc_threshold",
                "xtc_probability",
                "penalty_alpha",
                "num_beams",
                "encoder_rep_pen",
                "no_repeat_ngram_size",
                "freq_pen",
                "presence_pen",
                "ban_eos_token",
                "add_bos_token",
                "skip_special_tokens",
            }
        ),
        MIN_SIGNATURE_KEYS,
    ),
    (
        "a SillyTavern world book",
        frozenset({"entries"}),
        1,
    ),
    (
        "a SillyTavern character card",
        frozenset({"spec", "spec_version", "data", "first_mes", "mes_example", "char_name"}),
        MIN_SIGNATURE_KEYS,
    ),
    (
        "a SillyTavern regex script",
        frozenset({"scriptName", "findRegex", "replaceString", "placement", "trimStrings"}),
        MIN_SIGNATURE_KEYS,
    ),
)
_SYSTEM_PROMPT_KEYS: Final = frozenset({"name", "content", "post_history"})


def other_kind(data: Mapping[str, Any]) -> str | None:
    """What ``data`` is when it is a SillyTavern file of another kind than a Chat Completion
    preset (``"a SillyTavern instruct template"``), None when it may be a preset."""
    keys = set(data)
    if keys & CHAT_COMPLETION_KEYS:
        return None
    for what, signature, needed in _SIGNATURES:
        if len(keys & signature) >= needed:
            return what
    if "content" in keys and keys <= _SYSTEM_PROMPT_KEYS:
        return "a SillyTavern system prompt"
    return None


def refuse_other_kinds(data: Mapping[str, Any], *, source: str) -> None:
    """Raise :class:`FormatError` (one line: what the file is, what is expected) when ``data``
    is another kind of SillyTavern file than a Chat Completion preset."""
    what = other_kind(data)
    if what is not None:
        raise FormatError(f"this is {what}, {_EXPECTED}", source=source)


__all__ = ["CHAT_COMPLETION_KEYS", "MIN_SIGNATURE_KEYS", "other_kind", "refuse_other_kinds"]
