"""No dead ends (issue 13): a completion with no visible text fails the page with
EmptyReplyError, the user's input stays on the failed floor, regenerate retries it on a new
page of the same floor, and a tool call the session did not offer is never run."""

from __future__ import annotations

import pytest

from engine.errors import EmptyReplyError, GenerationError
from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeToolCall
from tests.test_turns.conftest import KEY, Recorder, line

pytestmark = pytest.mark.timeout(60)

SET_MOOD = FakeToolCall(name="set_variable", arguments='{"name":"mood","value":"stormy"}')


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (FakeReply(text=""), "the model returned no text"),
        (FakeReply(text="  \n\t "), "the model returned no text"),
        (FakeReply(text="<summary>only a tag</summary>"), "the model returned no text"),
        (FakeReply(tool_calls=[SET_MOOD]), "the model returned no text"),
        (
            FakeReply(text="", finish_reason="content_filter"),
            "the model's content filter stopped the reply",
        ),
    ],
)
async def test_a_reply_with_no_text_fails_and_regenerate_retries_it(
    remote: TavernService,
    fake: FakeOpenAIServer,
    events: Recorder,
    reply: FakeReply,
    message: str,
) -> None:
    fake.script(reply)
    with pytest.raises(EmptyReplyError) as caught:
        await remote.respond(KEY, MAIN_BRANCH, [line("hello there")])
    assert str(caught.value) == message
    assert isinstance(caught.value, GenerationError)
    # The failed floor keeps the input and the error, exactly as the user is told.
    history = await remote.history(KEY, MAIN_BRANCH)
    assert [(v.floor, v.failed, v.text) for v in history] == [(1, True, "hello there")]
    async with remote.storage.unit_of_work() as uow:
        (failed,) = await uow.floors.in_state("failed")
    assert failed.error == message
    failures = [e.payload["error"] for e in events.events if e.name == "generation.failed"]
    assert failures == [message]
    # The tool call was not offered (tools are off by default) and was never run.
    assert "tools" not in fake.chat_requests[0].body
    assert await remote.variables(KEY, MAIN_BRANCH) == {}
    # Regenerate retries the same input on a new page of the same floor.
    fake.script(FakeReply(text="A real answer."))
    view = await remote.regenerate(KEY, MAIN_BRANCH)
    assert (view.floor, view.text, view.failed) == (1, "A real answer.", False)
    assert fake.chat_requests[-1].last_user_text == "hello there"
    history = await remote.history(KEY, MAIN_BRANCH)
    assert [(v.floor, v.text) for v in history] == [(1, "A real answer.")]


async def test_text_with_a_call_that_was_not_offered_keeps_the_text_only(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    fake.script(FakeReply(text="She smiles.", tool_calls=[SET_MOOD]))
    view = await remote.respond(KEY, MAIN_BRANCH, [line("hi")])
    assert view.text == "She smiles."
    assert len(fake.chat_requests) == 1  # no second round for the call
    assert await remote.variables(KEY, MAIN_BRANCH) == {}


async def test_a_content_filter_stop_after_some_text_keeps_the_text(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    fake.script(FakeReply(text="She begins to", finish_reason="content_filter"))
    view = await remote.respond(KEY, MAIN_BRANCH, [line("hi")])
    assert view.text == "She begins to"


async def test_tools_are_offered_only_when_the_session_turns_them_on(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    await remote.set_session_option(KEY, "mode", "native")
    fake.script(FakeReply(text="No tools."))
    await remote.respond(KEY, MAIN_BRANCH, [line("one")])
    assert "tools" not in fake.chat_requests[-1].body
    await remote.set_session_option(KEY, "tools", "on")
    fake.script(FakeReply(tool_calls=[SET_MOOD]), FakeReply(text="The sky darkens."))
    view = await remote.respond(KEY, MAIN_BRANCH, [line("two")])
    assert view.text == "The sky darkens."
    offered = [t["function"]["name"] for t in fake.chat_requests[-2].body["tools"]]
    assert "set_variable" in offered
    assert (await remote.variables(KEY, MAIN_BRANCH))["mood"] == "stormy"
