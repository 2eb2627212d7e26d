"""Issue 15: SillyTavern files that are not Chat Completion presets are refused as presets.

A text-completion sampler preset, an instruct or context template (and the other files
SillyTavern also calls presets) used to import as an empty Chat Completion preset and play
with the default prompts. The command line and the service import (Discord ``/preset import``,
Telegram documents) now refuse them in one line naming what the file is and what is expected,
storing nothing; every real Chat Completion preset still imports.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapters.telegram.imports import detect
from engine.errors import FormatError
from engine.formats.json_input import load_object
from engine.formats.preset import parse_preset
from engine.formats.preset_kinds import MIN_SIGNATURE_KEYS, other_kind
from engine.turns.service import TavernService
from tests.conftest import SHARED
from tests.test_import_export_cli.support import Cli
from tests.test_turns.conftest import KEY

REALWORLD = SHARED / "realworld"
EXPECTED = "not a Chat Completion preset"

# Small hand-written files of each kind, shaped as SillyTavern saves them.
OTHER_KINDS: dict[str, tuple[dict[str, Any], str]] = {
    "instruct": (
        {
            "name": "Chat-ish",
            "input_sequence": "<|user|>",
            "output_sequence": "<|assistant|>",
            "system_sequence": "<|system|>",
            "stop_sequence": "<|end|>",
            "wrap": True,
            "macro": True,
            "names_behavior": "force",
        },
        "this is a SillyTavern instruct template",
    ),
    "instruct-2023": (
        {
            "name": "Old",
            "system_prompt": "Be nice.",
            "input_sequence": "### Instruction:",
            "output_sequence": "### Response:",
            "wrap": True,
            "names": True,
        },
        "this is a SillyTavern instruct template",
    ),
    "context": (
        {
            "name": "Plain",
            "story_string": "{{description}}\n{{personality}}",
            "example_separator": "***",
            "chat_start": "***",
        },
        "this is a SillyTavern context template",
    ),
    "textgen": (
        {"temp": 0.7, "rep_pen": 1.1, "top_k": 40, "min_p": 0.05, "sampler_order": [6, 0, 1]},
        "this is a SillyTavern text-completion sampler preset",
    ),
    "novelai": (
        {
            "temperature": 1.2,
            "repetition_penalty": 2.5,
            "repetition_penalty_range": 2048,
            "tail_free_sampling": 0.9,
            "order": [1, 0, 2],
        },
        "this is a SillyTavern NovelAI sampler preset",
    ),
    "master-export": (
        {"instruct": {"input_sequence": "a"}, "context": {"story_string": "b"}},
        "this is a SillyTavern Advanced Formatting export",
    ),
    "sysprompt": (
        {"name": "Neutral", "content": "Write {{char}}'s reply."},
        "this is a SillyTavern system prompt",
    ),
    "worldbook": ({"entries": {"0": {"key": ["a"], "content": "b"}}}, "a SillyTavern world book"),
}


@pytest.mark.parametrize("kind", sorted(OTHER_KINDS))
def test_cli_refuses_other_kinds_in_one_line(cli: Cli, kind: str) -> None:
    data, said = OTHER_KINDS[kind]
    path = cli.dir / f"{kind}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = cli("import", "preset", path)
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert said in err and EXPECTED in err and "OpenAI Settings" in err, err
    assert cli.dump().get("asset", []) == []


@pytest.mark.parametrize("kind", sorted(OTHER_KINDS))
async def test_service_import_refuses_other_kinds(service: TavernService, kind: str) -> None:
    data, said = OTHER_KINDS[kind]
    before = await service.session_info(KEY)
    with pytest.raises(FormatError) as caught:
        await service.import_asset(KEY, "preset", f"{kind}.json", json.dumps(data).encode())
    message = str(caught.value)
    assert "\n" not in message and said in message and EXPECTED in message, message
    assert message.startswith(f"{kind}.json: ")
    assert await service.list_assets(KEY, "preset") == []
    assert await service.session_info(KEY) == before


def _chat_completion_presets() -> list[Path]:
    manifest = json.loads((REALWORLD / "manifest.json").read_text("utf-8"))
    found = [REALWORLD / "presets" / e["dest"] for e in manifest if e["kind"] == "presets"]
    found += sorted((SHARED / "fixtures" / "st").glob("preset_*.json"))
    return found


def _bytes(path: Path) -> bytes:
    return path.read_bytes()


def test_the_realworld_manifest_lists_every_preset_file() -> None:
    listed = {p.name for p in _chat_completion_presets() if p.parent.name == "presets"}
    assert listed == {p.name for p in (REALWORLD / "presets").iterdir()}
    assert len(listed) >= 12


@pytest.mark.parametrize("path", _chat_completion_presets(), ids=lambda p: p.name)
def test_every_real_chat_completion_preset_still_imports(path: Path) -> None:
    obj = load_object(path.read_bytes(), source=path.name)
    assert other_kind(obj) is None
    preset = parse_preset(obj, source=path.name)
    assert preset.effective_order()


@pytest.mark.parametrize("path", _chat_completion_presets()[:3], ids=lambda p: p.name)
async def test_service_imports_real_chat_completion_presets(
    service: TavernService, path: Path
) -> None:
    summary = await service.import_asset(KEY, "preset", path.name, _bytes(path))
    assert summary.kind == "preset"
    assert (await service.session_info(KEY)).preset == path.stem


def test_one_signature_key_is_not_enough() -> None:
    """MIN_SIGNATURE_KEYS: one key another kind uses does not make a file that kind."""
    assert MIN_SIGNATURE_KEYS == 2
    assert other_kind({"temp": 0.7}) is None
    assert other_kind({"temp": 0.7, "rep_pen": 1.1}) is not None
    assert parse_preset({"temp": 0.7}, source="x.json").sampling.temperature == 1.0


def test_any_chat_completion_key_wins() -> None:
    data = {"prompts": [], "input_sequence": "a", "output_sequence": "b", "temp": 1, "rep_pen": 1}
    assert other_kind(data) is None
    parse_preset(data, source="x.json")


def test_telegram_detects_a_legacy_chat_completion_preset() -> None:
    """A 2023 preset (main_prompt, no prompts) sent without a caption is a preset, not an
    unknown file."""
    path = REALWORLD / "presets" / "st2023_Default_legacy.json"
    assert detect(path.name, _bytes(path)).kind == "preset"


@pytest.mark.parametrize("kind", ["instruct", "context", "textgen", "novelai"])
def test_telegram_names_other_kinds_sent_without_a_caption(kind: str) -> None:
    data, said = OTHER_KINDS[kind]
    with pytest.raises(FormatError) as caught:
        detect(f"{kind}.json", json.dumps(data).encode())
    assert said in str(caught.value) and EXPECTED in str(caught.value)
