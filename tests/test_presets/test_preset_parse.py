"""Chat Completion presets: the SillyTavern default imports, orders resolve, export is lossless."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import FormatError
from engine.formats.preset import (
    DEFAULT_PROMPT_ORDER,
    NAMES_COMPLETION,
    Preset,
    parse_preset,
    preset_to_json,
)
from tests.conftest import ST_FIXTURES

DATA = ST_FIXTURES


@pytest.fixture
def default_json() -> dict[str, object]:
    return json.loads((DATA / "preset_cc_ST_Default.json").read_text(encoding="utf-8"))


def test_default_preset_imports_every_prompt(default_json: dict[str, object]) -> None:
    preset = parse_preset(default_json, source="Default.json")
    ids = [p.identifier for p in preset.prompts]
    assert ids[:4] == ["main", "nsfw", "dialogueExamples", "jailbreak"]
    assert preset.prompt("chatHistory") is not None and preset.prompt("chatHistory").marker
    main = preset.prompt("main")
    assert main is not None and "{{char}}" in main.content and main.system_prompt is True
    assert preset.openai_max_context == 4095 and preset.openai_max_tokens == 300
    assert preset.wi_format == "{0}" and preset.new_chat_prompt == "[Start a new Chat]"


def test_default_preset_uses_order_100001(default_json: dict[str, object]) -> None:
    order = parse_preset(default_json, source="Default.json").effective_order()
    assert [s.identifier for s in order][:3] == ["main", "worldInfoBefore", "personaDescription"]
    assert {s.identifier: s.enabled for s in order}["enhanceDefinitions"] is False


def test_order_falls_back_to_100000_then_default(default_json: dict[str, object]) -> None:
    legacy = copy.deepcopy(default_json)
    legacy["prompt_order"] = [o for o in legacy["prompt_order"] if o["character_id"] == 100000]
    order = parse_preset(legacy, source="x").effective_order()
    assert "personaDescription" not in [s.identifier for s in order]
    legacy["prompt_order"] = []
    order = parse_preset(legacy, source="x").effective_order()
    assert [(s.identifier, s.enabled) for s in order] == list(DEFAULT_PROMPT_ORDER)


def test_order_drops_slots_without_a_prompt() -> None:
    data = {
        "prompts": [{"identifier": "mine", "content": "x", "system_prompt": False}],
        "prompt_order": [
            {"character_id": 100001, "order": [{"identifier": "ghost"}, {"identifier": "mine"}]}
        ],
    }
    order = parse_preset(data, source="x").effective_order()
    assert [s.identifier for s in order] == ["mine"]


def test_export_round_trips_unchanged(default_json: dict[str, object]) -> None:
    preset = parse_preset(default_json, source="Default.json")
    assert preset_to_json(preset) == default_json


def test_export_writes_changes_and_keeps_unknown_keys(default_json: dict[str, object]) -> None:
    data = copy.deepcopy(default_json)
    data["tool_reasoning_mode"] = "auto"
    preset = parse_preset(data, source="x")
    changed = replace(preset, squash_system_messages=True, openai_max_context=8000)
    out = preset_to_json(changed)
    assert out["squash_system_messages"] is True and out["openai_max_context"] == 8000
    assert out["tool_reasoning_mode"] == "auto"


def test_legacy_fields_migrate() -> None:
    preset = parse_preset(
        {"main_prompt": "Be {{char}}.", "names_in_completion": True, "temp_openai": 0.7},
        source="old.json",
    )
    main = preset.prompt("main")
    assert main is not None and main.content == "Be {{char}}."
    assert preset.names_behavior == NAMES_COMPLETION
    assert preset.sampling.temperature == 0.7


def test_in_chat_prompt_fields() -> None:
    preset = parse_preset(
        {
            "prompts": [
                {
                    "identifier": "x",
                    "role": "assistant",
                    "injection_position": 1,
                    "injection_depth": "2",
                    "injection_order": 50,
                    "injection_trigger": ["normal"],
                }
            ]
        },
        source="x",
    )
    p = preset.prompts[0]
    assert (p.in_chat, p.injection_depth, p.injection_order, p.role) == (True, 2, 50, "assistant")
    assert p.system_prompt is None  # absent: the relative-placement quirk applies
    assert p.triggered_by("normal") and not p.triggered_by("continue")


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"prompts": {"a": 1}}, "prompts"),
        ({"prompts": [{"identifier": ""}]}, "prompts[0].identifier"),
        ({"prompts": [{"identifier": "a", "role": "narrator"}]}, "prompts[0].role"),
        ({"prompts": [{"identifier": "a", "injection_depth": "deep"}]}, "injection_depth"),
        ({"prompt_order": [{"order": []}]}, "prompt_order[0].character_id"),
        ({"temperature": "hot"}, "temperature"),
        ({"openai_max_context": 0}, "openai_max_context"),
        ({"names_behavior": 7}, "names_behavior"),
    ],
)
def test_malformed_presets_name_the_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(FormatError) as info:
        parse_preset(data, source="bad.json")
    assert "bad.json" in str(info.value) and field in str(info.value)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=20,
)
_keys = st.sampled_from(
    [
        "prompts",
        "prompt_order",
        "temperature",
        "names_behavior",
        "openai_max_context",
        "identifier",
        "order",
        "character_id",
        "injection_depth",
        "role",
        "extensions",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_keys | st.text(max_size=5), _json, max_size=6))
def test_fuzz_parse_preset_only_raises_format_error(data: dict[str, object]) -> None:
    try:
        preset = parse_preset(data, source="fuzz.json")
    except FormatError:
        return
    assert isinstance(preset, Preset)
    preset.effective_order()
    json.dumps(preset_to_json(preset), default=str)


_prompt_keys = st.sampled_from(
    [
        "identifier",
        "role",
        "content",
        "system_prompt",
        "marker",
        "injection_position",
        "injection_depth",
        "injection_order",
        "injection_trigger",
        "forbid_overrides",
    ]
)
_prompt = st.dictionaries(_prompt_keys, _json, max_size=6) | _json
_slot = st.dictionaries(st.sampled_from(["identifier", "enabled"]), _json) | _json
_order = st.dictionaries(
    st.sampled_from(["character_id", "order"]), _json | st.lists(_slot, max_size=3)
)


@settings(max_examples=300, deadline=None)
@given(
    st.fixed_dictionaries(
        {"prompts": st.lists(_prompt, max_size=3), "prompt_order": st.lists(_order, max_size=2)}
    )
)
def test_fuzz_nested_prompts_only_raise_format_error(data: dict[str, object]) -> None:
    try:
        preset = parse_preset(data, source="fuzz.json")
    except FormatError:
        return
    preset.effective_order()
    json.dumps(preset_to_json(preset), default=str)
