"""Memory in the turn (compat_plus): summary tags of a committed reply are stored after the
commit and injected into the next prompt; query_memory searches them; compat_strict leaves
memory alone."""

from __future__ import annotations

import json

import pytest

from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeToolCall
from tests.test_turns.conftest import KEY, Recorder, line

pytestmark = pytest.mark.timeout(60)


async def test_summary_tags_come_back_as_memory(
    remembering: TavernService, fake: FakeOpenAIServer
) -> None:
    await remembering.configure(
        KEY, prompt_mode="compat_plus", slots=["narrator", "memory"], tools={"enabled": True}
    )
    fake.script(
        FakeReply(text="Mira nods.<summary>Ann found a silver key in the well</summary>"),
        FakeReply(text="not json"),  # the memory agent's answer: invalid, tags are kept
    )
    view = await remembering.respond(KEY, MAIN_BRANCH, [line("I look into the well")])
    assert view.text == "Mira nods."
    await remembering.drain()
    fake.script(
        FakeReply(
            tool_calls=[
                FakeToolCall(name="query_memory", arguments=json.dumps({"query": "silver key"}))
            ]
        ),
        FakeReply(text="The key glints."),
        FakeReply(text="{}"),
    )
    await remembering.respond(KEY, MAIN_BRANCH, [line("Where is the silver key?")])
    await remembering.drain()
    prompt = fake.chat_requests[2].messages
    assert any("silver key in the well" in m["content"] for m in prompt if m["role"] == "system")
    tool_answer = fake.chat_requests[3].messages[-1]
    assert tool_answer["role"] == "tool" and "silver key" in tool_answer["content"]


async def test_compat_strict_does_not_touch_memory(
    remembering: TavernService, fake: FakeOpenAIServer, events: Recorder
) -> None:
    await remembering.set_session_option(KEY, "mode", "compat_strict")
    fake.script(FakeReply(text="Hi.<summary>a fact</summary>"), FakeReply(text="Again."))
    await remembering.respond(KEY, MAIN_BRANCH, [line("one")])
    await remembering.respond(KEY, MAIN_BRANCH, [line("two")])
    await remembering.drain()
    assert len(fake.chat_requests) == 2  # no memory agent call
    assert not any(e.name.startswith("memory.committed") for e in events.events)
