"""Editing a reply as a new page, hiding a floor, a floor's page texts, the user's input in
history views, and impersonation (a draft the model writes for the user, never committed)."""

from __future__ import annotations

import json

import pytest

from engine.errors import EngineError, NotFoundError
from engine.turns.api import MAIN_BRANCH
from engine.turns.pages import EDITED_FROM
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeError, FakeOpenAIServer, FakeReply, FakeToolCall
from tests.test_turns.conftest import KEY, line

pytestmark = pytest.mark.timeout(60)


async def test_history_views_carry_the_input_with_its_speaker(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    fake.script(FakeReply(text="Hello, Ann."), FakeError(status=500))
    await remote.respond(KEY, MAIN_BRANCH, [line("hi there")])
    with pytest.raises(EngineError):
        await remote.respond(KEY, MAIN_BRANCH, [line("are you there?")])
    first, failed = await remote.history(KEY, MAIN_BRANCH)
    assert first.inputs == (("Ann", "hi there"),) and first.text == "Hello, Ann."
    assert failed.failed and failed.inputs == (("Ann", "are you there?"),)
    assert failed.error is not None and "500" in failed.error


async def test_an_edited_reply_is_a_new_page_and_the_original_stays(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    await remote.configure(KEY, tools={"enabled": True})
    mood = json.dumps({"name": "mood", "value": "happy"})
    fake.script(
        FakeReply(tool_calls=[FakeToolCall(name="set_variable", arguments=mood)]),
        FakeReply(text="She smiles."),
    )
    await remote.respond(KEY, MAIN_BRANCH, [line("hi")])
    edited = await remote.edit_reply(KEY, MAIN_BRANCH, 1, "She grins widely.")
    assert (edited.floor, edited.page, edited.pages) == (1, 2, 2)
    assert edited.text == "She grins widely." and edited.inputs == (("Ann", "hi"),)
    assert await remote.page_texts(KEY, MAIN_BRANCH, 1) == ["She smiles.", "She grins widely."]
    # The story's state does not change with its wording: the edited page keeps the writes.
    assert (await remote.variables(KEY, MAIN_BRANCH))["mood"] == "happy"
    back = await remote.swipe(KEY, MAIN_BRANCH, -1)
    assert (back.page, back.text) == (1, "She smiles.")
    # The next turn's prompt shows the edited text once it is the active page again.
    await remote.swipe(KEY, MAIN_BRANCH, +1)
    dry = await remote.dry_run(KEY, MAIN_BRANCH, "next")
    contents = [m["content"] for m in dry["messages"]]
    assert any("She grins widely." in c for c in contents)
    assert not any("She smiles." in c for c in contents)


async def test_only_the_latest_reply_can_be_edited(
    service: TavernService,
) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("one")])
    await service.respond(KEY, MAIN_BRANCH, [line("two")])
    with pytest.raises(EngineError, match="only the latest floor's reply can be edited") as err:
        await service.edit_reply(KEY, MAIN_BRANCH, 1, "changed")
    assert "floor 2" in str(err.value)
    with pytest.raises(EngineError, match="needs some text"):
        await service.edit_reply(KEY, MAIN_BRANCH, 2, "  ")
    assert len(await service.page_texts(KEY, MAIN_BRANCH, 2)) == 1


async def test_the_edit_marks_the_page_it_replaced(service: TavernService) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("one")])
    await service.edit_reply(KEY, MAIN_BRANCH, 1, "mine")
    branch = await service.timeline.branch(
        (await service.timeline.find_session("console", "test")).id,  # type: ignore[union-attr]
        MAIN_BRANCH,
    )
    view = await service.history_service.floor_view(branch.id, 1)
    assert view.active is not None and view.active.meta[EDITED_FROM] == 1


async def test_a_hidden_floor_leaves_history_and_prompt(service: TavernService) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("the secret word is plum")])
    await service.respond(KEY, MAIN_BRANCH, [line("and then")])
    await service.hide_floor(KEY, MAIN_BRANCH, 1)
    assert [v.floor for v in await service.history(KEY, MAIN_BRANCH)] == [2]
    dry = await service.dry_run(KEY, MAIN_BRANCH, "next")
    assert not any("plum" in m["content"] for m in dry["messages"])
    with pytest.raises(EngineError, match="already hidden"):
        await service.hide_floor(KEY, MAIN_BRANCH, 1)
    with pytest.raises(NotFoundError, match="no floor 9"):
        await service.hide_floor(KEY, MAIN_BRANCH, 9)


async def test_a_fork_cannot_hide_the_floors_it_shares(service: TavernService) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("one")])
    await service.fork(KEY, MAIN_BRANCH, after_floor=1, name="side")
    with pytest.raises(EngineError, match="only its own floors"):
        await service.hide_floor(KEY, "side", 1)
    assert [v.floor for v in await service.history(KEY, MAIN_BRANCH)] == [1]


async def test_impersonate_writes_a_draft_and_commits_nothing(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    preset = {
        "prompts": [],
        "impersonation_prompt": "Write {{user}}'s next message.",
    }
    await remote.import_asset(KEY, "preset", "p.json", json.dumps(preset).encode())
    fake.script(FakeReply(text="Hello!"), FakeReply(text="I wave back."))
    await remote.respond(KEY, MAIN_BRANCH, [line("hi")])
    seen: list[str] = []

    async def on_text(text: str) -> None:
        seen.append(text)

    draft = await remote.impersonate(KEY, MAIN_BRANCH, on_text=on_text)
    assert draft == "I wave back." and seen[-1] == "I wave back."
    sent = fake.chat_requests[-1].messages
    assert sent[-1]["content"] == "Write Ann's next message."
    history = await remote.history(KEY, MAIN_BRANCH)
    assert [(v.floor, v.pages) for v in history] == [(1, 1)]
    named = await remote.impersonate(KEY, MAIN_BRANCH, user_name="Bea")
    assert fake.chat_requests[-1].messages[-1]["content"] == "Write Bea's next message."
    assert named  # the fake echoes when nothing is scripted


async def test_a_hidden_latest_floor_takes_no_new_page(service: TavernService) -> None:
    await service.respond(KEY, MAIN_BRANCH, [line("one")])
    await service.hide_floor(KEY, MAIN_BRANCH, 1)
    for again in (service.regenerate, service.continue_reply):
        with pytest.raises(EngineError, match="floor 1 of branch 'main' is hidden"):
            await again(KEY, MAIN_BRANCH)
