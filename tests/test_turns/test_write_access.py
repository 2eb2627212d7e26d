"""Who may write (issue 12): player text (messages, personas) runs its macros read-only, a game
master's assets (preset, card, world books) and Author's Note may write, and a persona is found
by its player's platform id, never by a name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.prompt.inputs import AuthorNote
from engine.turns.api import MAIN_BRANCH, Speaker, UserLine
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_turns.conftest import ANN, KEY, line

pytestmark = pytest.mark.timeout(60)

WRITES = "{{setvar::gold::999}}{{setglobalvar::admin::1}}"


def _preset(*contents: str) -> bytes:
    prompts = [
        {"identifier": "main", "name": "Main", "content": contents[0]},
        *(
            {"identifier": f"extra{i}", "name": f"Extra {i}", "content": text}
            for i, text in enumerate(contents[1:])
        ),
    ]
    order = [{"identifier": p["identifier"], "enabled": True} for p in prompts]
    order.append({"identifier": "chatHistory", "enabled": True})
    return json.dumps(
        {"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": order}]}
    ).encode()


async def _globals(service: TavernService) -> dict[str, Any]:
    return await service.variables(KEY, MAIN_BRANCH, "global")


async def _warnings(service: TavernService) -> list[dict[str, Any]]:
    async with service.storage.unit_of_work() as uow:
        floor = await uow.floors.latest((await service.parts.sessions.branch(1, MAIN_BRANCH)).id)
        assert floor is not None
        pages = await uow.pages.of_floors([floor.id])
    return list(pages[-1].meta.get("macro_warnings", []))


async def test_a_persona_description_writes_nothing(service: TavernService) -> None:
    # The preset shows the persona twice: through the persona prompt and through {{persona}}.
    await service.import_asset(KEY, "preset", "p.json", _preset("Play {{char}}. {{persona}}"))
    await service.set_persona(KEY, ANN.id, "Ann", f"{WRITES}A knight.")
    await service.respond(KEY, MAIN_BRANCH, [line("hello")])
    assert "gold" not in await service.variables(KEY, MAIN_BRANCH)
    assert "gold" not in await service.variables(KEY, MAIN_BRANCH, "chat")
    assert "admin" not in await _globals(service)
    refused = [w for w in await _warnings(service) if w["code"] == "macro_write_forbidden"]
    assert refused and {w["source"] for w in refused} == {"persona"}
    # The prompt still shows the description, with its write macros left as written.
    report = await service.dry_run(KEY, MAIN_BRANCH, "and now?")
    text = json.dumps(report["messages"])
    assert "A knight." in text and "{{setvar::gold::999}}" in text
    assert not report["macro"]["mutations"]


async def test_game_master_assets_and_note_still_write(service: TavernService) -> None:
    await service.import_asset(
        KEY, "preset", "p.json", _preset("{{setvar::hp::5}}{{setglobalvar::seen::1}}Play.")
    )
    await service.set_author_note(KEY, AuthorNote(text="{{setvar::noted::yes}}Be brief."))
    await service.respond(KEY, MAIN_BRANCH, [line("hello")])
    found = await service.variables(KEY, MAIN_BRANCH)
    assert found["hp"] == "5" and found["noted"] == "yes"
    assert (await _globals(service))["seen"] == "1"


async def test_a_typed_message_keeps_its_write_macros_raw(service: TavernService) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line(f"{WRITES} hello")])
    assert "gold" not in await service.variables(KEY, MAIN_BRANCH)
    assert "admin" not in await _globals(service)
    codes = [w["code"] for w in await _warnings(service)]
    assert "macro_write_forbidden" in codes


async def test_macro_mode_full_lets_player_text_write(service: TavernService) -> None:
    await service.set_session_option(KEY, "macro_mode", "full")
    await service.set_persona(KEY, ANN.id, "Ann", "{{setvar::gold::7}}A knight.")
    await service.respond(KEY, MAIN_BRANCH, [line("hello")])
    assert (await service.variables(KEY, MAIN_BRANCH))["gold"] == "7"


async def test_a_display_name_never_borrows_another_players_persona(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    await remote.set_persona(KEY, ANN.id, "Ann", "Ann is a knight of the realm.")
    impostor = Speaker(id="u2", name="Ann")  # no persona, displayed as "Ann"
    fake.script(FakeReply(text="Hello."), FakeReply(text="Welcome back."))
    await remote.respond(KEY, MAIN_BRANCH, [UserLine(speaker=impostor, text="I am Ann.")])
    assert "knight of the realm" not in json.dumps(fake.chat_requests[0].messages)
    report = await remote.dry_run(KEY, MAIN_BRANCH, "and now?")
    assert "knight of the realm" not in json.dumps(report["messages"])
    # The persona's own player still gets it.
    await remote.respond(KEY, MAIN_BRANCH, [line("It is me.")])
    assert "knight of the realm" in json.dumps(fake.chat_requests[1].messages)
