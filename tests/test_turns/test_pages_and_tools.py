"""Regenerate, swipe, fork and tools against the fake OpenAI server (real openai client)."""

from __future__ import annotations

import json

import pytest

from engine.errors import EmptyReplyError, EngineError
from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeError, FakeOpenAIServer, FakeReply, FakeToolCall
from tests.test_turns.conftest import KEY, Recorder, line

pytestmark = pytest.mark.timeout(60)


def set_mood(value: str, scope: str | None = None) -> FakeReply:
    args: dict[str, str] = {"name": "mood", "value": value}
    if scope:
        args["scope"] = scope
    return FakeReply(tool_calls=[FakeToolCall(name="set_variable", arguments=json.dumps(args))])


async def test_tool_writes_follow_pages_swipes_and_forks(
    remote: TavernService, fake: FakeOpenAIServer, events: Recorder
) -> None:
    await remote.configure(KEY, tools={"enabled": True})
    fake.script(set_mood("happy"), FakeReply(text="She smiles."))
    first = await remote.respond(KEY, MAIN_BRANCH, [line("hi")])
    assert first.text == "She smiles."
    assert (await remote.variables(KEY, MAIN_BRANCH))["mood"] == "happy"
    # the tool result went back to the model in the second request
    second_request = fake.chat_requests[1].messages
    assert second_request[-1]["role"] == "tool" and "happy" in second_request[-1]["content"]
    assert "tool.call_completed" in events.names()

    fake.script(set_mood("grim"), FakeReply(text="She frowns."))
    again = await remote.regenerate(KEY, MAIN_BRANCH)
    assert (again.floor, again.page, again.pages) == (1, 2, 2)
    assert (await remote.variables(KEY, MAIN_BRANCH))["mood"] == "grim"

    back = await remote.swipe(KEY, MAIN_BRANCH, -1)
    assert (back.page, back.text) == (1, "She smiles.")
    assert (await remote.variables(KEY, MAIN_BRANCH))["mood"] == "happy"
    forward = await remote.swipe(KEY, MAIN_BRANCH, +1)
    assert forward.text == "She frowns."
    assert (await remote.variables(KEY, MAIN_BRANCH))["mood"] == "grim"

    # a fork after floor 1 keeps the state it saw; later writes on main do not reach it
    fork = await remote.fork(KEY, MAIN_BRANCH, after_floor=1, name="alt")
    assert fork.fork_floor == 1
    fake.script(set_mood("angry"), FakeReply(text="She storms off."))
    await remote.respond(KEY, MAIN_BRANCH, [line("and now?")])
    assert (await remote.variables(KEY, MAIN_BRANCH))["mood"] == "angry"
    assert (await remote.variables(KEY, "alt"))["mood"] == "grim"
    fake.script(set_mood("calm"), FakeReply(text="She breathes."))
    alt = await remote.respond(KEY, "alt", [line("breathe")])
    assert alt.floor == 2
    assert (await remote.variables(KEY, "alt"))["mood"] == "calm"
    assert (await remote.variables(KEY, MAIN_BRANCH))["mood"] == "angry"
    # the execution records are kept with the floor's page
    history = await remote.variable_history(KEY, MAIN_BRANCH, "mood")
    assert [w.value for w in history] == ["grim", "angry"]


async def test_sandbox_writes_vanish_when_the_regenerate_fails(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    await remote.configure(KEY, tools={"enabled": True})
    fake.script(set_mood("happy"), FakeReply(text="ok"))
    await remote.respond(KEY, MAIN_BRANCH, [line("hi")])
    fake.script(set_mood("furious"), FakeError(status=500))
    with pytest.raises(EngineError):
        await remote.regenerate(KEY, MAIN_BRANCH)
    assert (await remote.variables(KEY, MAIN_BRANCH))["mood"] == "happy"
    view = (await remote.history(KEY, MAIN_BRANCH))[-1]
    assert (view.page, view.pages) == (1, 1)


async def test_tool_limits_are_enforced(remote: TavernService, fake: FakeOpenAIServer) -> None:
    await remote.configure(
        KEY,
        tools={
            "enabled": True,
            "max_calls_per_turn": 2,
            "max_steps": 3,
            "deny": {"*": ["roll_dice"]},
        },
    )
    many = FakeReply(
        tool_calls=[
            FakeToolCall(name="roll_dice", arguments='{"formula": "2d6"}'),
            FakeToolCall(name="get_variable", arguments='{"name": "mood"}'),
            FakeToolCall(name="current_time", arguments="{}"),
        ]
    )
    fake.script(many, set_mood("x"), set_mood("y"), FakeReply(text="done"))
    view = await remote.respond(KEY, MAIN_BRANCH, [line("go")])
    assert view.text == "done"
    records = await _records(remote)
    statuses = [(r["name"], r["status"]) for r in records]
    assert statuses[0] == ("roll_dice", "denied")  # deny list
    assert statuses[1] == ("get_variable", "ok")
    assert statuses[2][1] == "denied" and "max_calls_per_turn" in records[2]["result"]
    assert all(status == "denied" for _, status in statuses[3:])
    assert "mood" not in await remote.variables(KEY, MAIN_BRANCH)
    # the step limit: after max_steps tool rounds the model is asked without tools
    requests = fake.chat_requests
    assert len(requests) == 4
    assert "tools" in requests[2].body and "tools" not in requests[3].body


async def test_step_limit_defaults_to_five(remote: TavernService, fake: FakeOpenAIServer) -> None:
    await remote.configure(KEY, tools={"enabled": True})
    fake.script(*[set_mood(str(i)) for i in range(6)], FakeReply(text="end"))
    # five tool rounds, then a sixth request without tools that answered with a tool call
    # anyway: it is not run, and with no text the page fails (issue 13: no blank replies),
    # its staged writes dropped
    with pytest.raises(EmptyReplyError, match="the model returned no text"):
        await remote.respond(KEY, MAIN_BRANCH, [line("loop")])
    assert len(fake.chat_requests) == 6
    assert "tools" not in fake.chat_requests[5].body
    assert "mood" not in await remote.variables(KEY, MAIN_BRANCH)
    assert [(v.floor, v.failed) for v in await remote.history(KEY, MAIN_BRANCH)] == [(1, True)]


async def _records(service: TavernService) -> list[dict[str, str]]:
    async with service.storage.unit_of_work() as uow:
        floor = await uow.floors.latest((await service.parts.sessions.branch(1, MAIN_BRANCH)).id)
        assert floor is not None
        pages = await uow.pages.of_floors([floor.id])
    return list(pages[-1].meta["tool_records"])
