"""Builders for assembly tests."""

from __future__ import annotations

import json
from typing import Any

from engine.formats.preset import Preset, parse_preset
from engine.prompt.assemble import AssemblyResult, assemble
from engine.prompt.inputs import AssemblyInput, CharacterFields, HistoryLine, ListHistory
from tests.conftest import ST_FIXTURES

DATA = ST_FIXTURES


def default_preset() -> Preset:
    data = json.loads((DATA / "preset_cc_ST_Default.json").read_text(encoding="utf-8"))
    return parse_preset(data, source="Default.json")


def preset(
    prompts: list[dict[str, Any]], order: list[str | tuple[str, bool]], **kw: Any
) -> Preset:
    slots = [
        {"identifier": o, "enabled": True}
        if isinstance(o, str)
        else {"identifier": o[0], "enabled": o[1]}
        for o in order
    ]
    data = {"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": slots}], **kw}
    return parse_preset(data, source="test.json")


def chat(*texts: str, user: str = "Ann", char: str = "Sera") -> ListHistory:
    """Alternating messages, the first from the user; floors numbered from 1."""
    lines = [
        HistoryLine(text=t, is_user=i % 2 == 0, name=user if i % 2 == 0 else char, floor=i + 1)
        for i, t in enumerate(texts)
    ]
    return ListHistory(lines)


def run(p: Preset, history: ListHistory | None = None, **kw: Any) -> AssemblyResult:
    kw.setdefault("character", CharacterFields(name="Sera"))
    kw.setdefault("user_name", "Ann")
    return assemble(AssemblyInput(preset=p, history=history or chat(), **kw))


def contents(result: AssemblyResult) -> list[str]:
    return [m.content for m in result.ir.messages]


def ids(result: AssemblyResult) -> list[str]:
    return [m.identifier for m in result.ir.messages]
