"""Respond and commit on the offline model: floors, pages, events, history, macros."""

from __future__ import annotations

import json

from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.test_turns.conftest import KEY, Recorder, line


async def test_respond_commits_a_floor_with_the_reply(
    service: TavernService, events: Recorder
) -> None:
    streamed: list[str] = []

    async def on_text(text: str) -> None:
        streamed.append(text)

    view = await service.respond(KEY, MAIN_BRANCH, [line("Hello there")], on_text=on_text)
    assert (view.floor, view.page, view.pages) == (1, 1, 1)
    assert "You said: Hello there" in view.text
    assert streamed and streamed[-1] == view.text
    names = events.names()
    for expected in (
        "floor.created",
        "generation.started",
        "generation.chunk",
        "generation.completed",
        "floor.committed",
        "message.appended",
    ):
        assert expected in names, expected
    second = await service.respond(KEY, MAIN_BRANCH, [line("Again")])
    assert second.floor == 2
    history = await service.history(KEY, MAIN_BRANCH)
    assert [v.floor for v in history] == [1, 2]
    info = await service.session_info(KEY)
    assert info.branches[0].floors == 2


async def test_user_typed_setvar_sets_nothing_but_user_expands(service: TavernService) -> None:
    view = await service.respond(KEY, MAIN_BRANCH, [line("{{setvar::x::1}}I am {{user}}")])
    assert "x" not in await service.variables(KEY, MAIN_BRANCH)
    # the offline model quotes the last user message as the prompt carried it
    assert "I am Ann" in view.text
    assert "{{setvar::x::1}}" in view.text


async def test_macro_mode_full_lets_user_text_write(service: TavernService) -> None:
    await service.configure(KEY, macro_mode="full")
    await service.respond(KEY, MAIN_BRANCH, [line("{{setvar::x::1}}hi")])
    assert str((await service.variables(KEY, MAIN_BRANCH))["x"]) == "1"


async def test_export_chat_is_sillytavern_jsonl(service: TavernService) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("one")])
    await service.regenerate(KEY, MAIN_BRANCH)
    data = await service.export_chat(KEY, MAIN_BRANCH)
    rows = [json.loads(x) for x in data.decode().splitlines()]
    assert rows[0]["user_name"] == "Ann"
    assert rows[1]["is_user"] is True and rows[1]["mes"] == "one"
    assert len(rows[2]["swipes"]) == 2 and rows[2]["swipe_id"] == 1
