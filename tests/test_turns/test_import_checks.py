"""Issue 12: the service import the chat front ends use refuses lone surrogates and deep JSON.

Discord and Telegram hand uploaded files to ``TavernService.import_asset``; a lone surrogate
used to be stored (then fail every turn) or crash the import. Now the import raises one
FormatError naming the file and the field, and the session is left as it was.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.errors import FormatError
from engine.formats.json_input import MAX_IMPORT_JSON_DEPTH
from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.test_turns.conftest import KEY, line

LONE = "\ud800"


def _deep(levels: int) -> dict[str, Any]:
    top: dict[str, Any] = {}
    here = top
    for _ in range(levels - 1):
        here["a"] = {}
        here = here["a"]
    return top


CASES = [
    (
        "worldbook",
        "lore.json",
        {"entries": {"3": {"uid": 3, "key": ["k"], "content": LONE}}},
        "entries.3.content",
    ),
    (
        "preset",
        "story.json",
        {"prompts": [{"identifier": "main", "content": LONE}]},
        "prompts[0].content",
    ),
    (
        "card",
        "bob.json",
        {"spec": "chara_card_v2", "data": {"name": "Bob", "first_mes": LONE}},
        "data.first_mes",
    ),
    ("regex", "clean.json", {"scriptName": LONE, "findRegex": "/a/g"}, "scriptName"),
]


@pytest.mark.parametrize(("kind", "name", "obj", "field"), CASES, ids=[c[0] for c in CASES])
async def test_service_import_refuses_a_lone_surrogate(
    service: TavernService, kind: str, name: str, obj: dict[str, Any], field: str
) -> None:
    before = await service.session_info(KEY)
    with pytest.raises(FormatError) as info:
        await service.import_asset(KEY, kind, name, json.dumps(obj).encode())  # type: ignore[arg-type]
    assert (info.value.source, info.value.field) == (name, field)
    assert "lone surrogate" in str(info.value) and "\n" not in str(info.value)
    assert await service.session_info(KEY) == before
    reply = await service.respond(KEY, MAIN_BRANCH, [line("still fine?")])
    assert reply.text


async def test_service_import_refuses_a_chat_nested_900_levels(service: TavernService) -> None:
    lines = [
        {"user_name": "Ann", "character_name": "Mira", "chat_metadata": _deep(900)},
        {"name": "Mira", "is_user": False, "mes": "hello"},
    ]
    data = "\n".join(json.dumps(x) for x in lines).encode()
    with pytest.raises(FormatError) as info:
        await service.import_asset(KEY, "chat", "deep.jsonl", data)
    assert info.value.field.startswith("line 1: chat_metadata.a.a")
    assert f"MAX_IMPORT_JSON_DEPTH={MAX_IMPORT_JSON_DEPTH}" in str(info.value)
    ids = await service.parts.sessions.ids(KEY)
    assert [b.name for b in await service.timeline.branches(ids.session_id)] == [MAIN_BRANCH]
