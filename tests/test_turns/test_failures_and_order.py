"""Failures, recovery and ordering: a failed turn changes nothing and the next one works;
floors left generating by a crash fail on start; one generation per branch, in order."""

from __future__ import annotations

import asyncio

import pytest

from adapters.storage import SqlStorage
from engine.errors import EngineError, GenerationError
from engine.timeline.values import NewMessage
from engine.turns.api import MAIN_BRANCH, SessionKey
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeToolCall
from tests.test_turns.conftest import KEY, Recorder, line, offline_service

pytestmark = pytest.mark.timeout(60)


async def test_500_mid_stream_fails_the_floor_and_the_next_message_works(
    remote: TavernService, fake: FakeOpenAIServer, events: Recorder
) -> None:
    await remote.configure(KEY, tools={"enabled": True})
    await remote.set_variable(KEY, MAIN_BRANCH, "mood", "calm", "chat")
    tool = FakeReply(
        tool_calls=[FakeToolCall(name="set_variable", arguments='{"name":"mood","value":"x"}')]
    )
    fake.script(tool, FakeReply(text="a long reply that breaks", error_after_chunks=2))
    seen: list[str] = []

    async def on_text(text: str) -> None:
        seen.append(text)

    with pytest.raises(GenerationError) as caught:
        await remote.respond(KEY, MAIN_BRANCH, [line("hi")], on_text=on_text)
    assert "mid-stream" in str(caught.value)
    assert seen  # some text had streamed before the error
    assert await remote.variables(KEY, MAIN_BRANCH) == {"mood": "calm"}
    async with remote.storage.unit_of_work() as uow:
        floors = await uow.floors.in_state("failed")
    assert [f.seq for f in floors] == [1]
    assert "generation.failed" in events.names() and "floor.failed" in events.names()
    fake.script(FakeReply(text="fine now"))
    view = await remote.respond(KEY, MAIN_BRANCH, [line("again")])
    assert (view.floor, view.text) == (2, "fine now")  # floor 1 failed and keeps its number
    # The failed floor's message stays part of the chat: the next prompt holds it.
    contents = [m["content"] for m in fake.chat_requests[-1].messages]
    assert contents[-2:] == ["hi", "again"]


async def test_floors_left_generating_fail_on_start(storage: SqlStorage, events: Recorder) -> None:
    first = offline_service(storage, events)
    await first.open_session(KEY)
    await first.respond(KEY, MAIN_BRANCH, [line("one")])
    # a crash mid-turn: floor 2 generating with a pending page
    branch = await first.parts.sessions.branch(1, MAIN_BRANCH)
    floor = await first.timeline.open_floor(branch.id, [NewMessage(role="user", raw="two")])
    await first.timeline.start_generating(floor.id)
    await first.timeline.add_page(floor.id)
    restarted = offline_service(storage, events)
    failed = await restarted.start()
    assert [f.seq for f in failed] == [2]
    view = await restarted.respond(KEY, MAIN_BRANCH, [line("three")])
    assert view.floor == 3
    history = await restarted.history(KEY, MAIN_BRANCH)
    assert [(v.floor, v.failed) for v in history] == [(1, False), (2, True), (3, False)]
    assert history[1].text == "two"


async def test_two_messages_at_once_give_two_floors_in_order(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    fake.script(FakeReply(text="first", latency_s=0.3), FakeReply(text="second"))
    a = asyncio.create_task(remote.respond(KEY, MAIN_BRANCH, [line("A")]))
    await fake.wait_requests(1)
    b = asyncio.create_task(remote.respond(KEY, MAIN_BRANCH, [line("B")]))
    first, second = await asyncio.gather(a, b)
    assert (first.floor, first.text) == (1, "first")
    assert (second.floor, second.text) == (2, "second")
    # the second prompt saw the first floor: its history ends with A, first, B
    contents = [m["content"] for m in fake.chat_requests[1].messages]
    assert contents[-3:] == ["A", "first", "B"]


async def test_two_branches_generate_at_once(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    fake.script(FakeReply(text="root"))
    await remote.respond(KEY, MAIN_BRANCH, [line("root")])
    await remote.fork(KEY, MAIN_BRANCH, after_floor=1, name="side")

    def responder(body: object) -> FakeReply:
        return FakeReply(text="echo", latency_s=0.5)

    fake.responder = responder  # type: ignore[assignment]
    tasks = [
        asyncio.create_task(remote.respond(KEY, MAIN_BRANCH, [line("m")])),
        asyncio.create_task(remote.respond(KEY, "side", [line("s")])),
    ]
    # both requests are at the server before either has been answered
    await fake.wait_requests(3, timeout_s=5.0)
    assert not any(t.done() for t in tasks)
    assert len([r for r in fake.chat_requests if not r.finished]) == 2
    views = await asyncio.gather(*tasks)
    assert [(v.branch, v.floor) for v in views] == [(MAIN_BRANCH, 2), ("side", 2)]


async def test_cancelled_turn_fails_and_the_branch_goes_on(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    fake.script(FakeReply(text="slow " * 50, chunk_delay_s=0.2, chunk_chars=5))
    task = asyncio.create_task(remote.respond(KEY, MAIN_BRANCH, [line("hi")]))
    await fake.wait_requests(1)
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    fake.script(FakeReply(text="ok"))
    view = await remote.respond(KEY, MAIN_BRANCH, [line("again")])
    assert view.floor == 2


async def test_regenerate_without_a_reply_is_refused(service: TavernService) -> None:
    with pytest.raises(EngineError):
        await service.regenerate(KEY, MAIN_BRANCH)
    with pytest.raises(EngineError):
        await service.swipe(KEY, MAIN_BRANCH, 1)


async def test_narrator_disabled_is_an_error_and_nothing_stays_generating(
    service: TavernService,
) -> None:
    await service.configure(KEY, slots=["director"])
    with pytest.raises(EngineError, match="narrator"):
        await service.respond(KEY, MAIN_BRANCH, [line("hi")])
    await service.configure(KEY, slots=["narrator"])
    assert (await service.respond(KEY, MAIN_BRANCH, [line("hi")])).floor == 2


async def test_recovery_of_one_session_leaves_the_others_alone(
    storage: SqlStorage, events: Recorder
) -> None:
    other = SessionKey(platform="discord", realm="g1", key="c1")
    bot = offline_service(storage, events)
    for key in (KEY, other):
        await bot.open_session(key)
    ids = {}
    for key in (KEY, other):
        branch = await bot.parts.sessions.branch(
            (await bot.parts.sessions.ids(key)).session_id, MAIN_BRANCH
        )
        floor = await bot.timeline.open_floor(branch.id, [NewMessage(role="user", raw="x")])
        await bot.timeline.start_generating(floor.id)
        ids[key] = floor.id
    console = offline_service(storage, events)
    failed = await console.start(only=KEY)
    assert [f.id for f in failed] == [ids[KEY]]
    async with storage.unit_of_work() as uow:
        assert (await uow.floors.get(ids[other])).state == "generating"
    assert await console.start(only=SessionKey(platform="x", realm="y", key="none")) == []
