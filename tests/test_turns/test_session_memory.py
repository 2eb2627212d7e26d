"""The ``memory`` option (issue 13): on (the default), a compat_plus session injects the memory
block built from earlier summaries, in its turns and its dry run; off, no summary is recorded
(the tags are still stripped), no memory agent runs, no memory job runs, nothing is injected.
compat_strict never injects."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.storage import SqlStorage
from bot.scheduler import MemoryScheduler, session_memory_on
from engine.memory.jobs import JobType
from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_turns.conftest import KEY, Recorder, line

pytestmark = pytest.mark.timeout(60)

FACT = "Ann hid the silver key under the third stone"
TAGGED = FakeReply(text=f"Mira nods.<summary>{FACT}</summary>")
AGENT = FakeReply(text="not json")  # the memory agent's answer: invalid, the tags are kept


@pytest.fixture
def svc(remembering: TavernService) -> TavernService:
    return remembering


def _system_text(messages: list[Any]) -> str:
    return "\n".join(str(m["content"]) for m in messages if m["role"] == "system")


async def test_a_new_session_injects_the_memory_block_and_offers_no_tools(
    svc: TavernService, fake: FakeOpenAIServer
) -> None:
    assert (await svc.session_info(KEY)).prompt_mode == "compat_plus"
    fake.script(TAGGED, AGENT)
    view = await svc.respond(KEY, MAIN_BRANCH, [line("I hide the key")])
    assert view.text == "Mira nods."
    await svc.drain()
    dry = await svc.dry_run(KEY, MAIN_BRANCH, "Where is the silver key?")
    assert FACT in _system_text(dry["messages"])
    assert dry["tools"] == []
    fake.script(FakeReply(text="Under the stone."), AGENT)
    await svc.respond(KEY, MAIN_BRANCH, [line("Where is the silver key?")])
    narrator = fake.chat_requests[2]
    assert FACT in _system_text(narrator.messages)
    assert all("tools" not in r.body for r in fake.chat_requests)


async def test_memory_off_records_nothing_runs_no_agent_and_injects_nothing(
    svc: TavernService, fake: FakeOpenAIServer, events: Recorder
) -> None:
    await svc.set_session_option(KEY, "memory", "off")
    fake.script(TAGGED, FakeReply(text="Under the stone."))
    view = await svc.respond(KEY, MAIN_BRANCH, [line("I hide the key")])
    assert view.text == "Mira nods."  # the tag is never shown
    await svc.drain()
    await svc.respond(KEY, MAIN_BRANCH, [line("Where is the silver key?")])
    await svc.drain()
    assert len(fake.chat_requests) == 2  # the narrator twice, no memory agent
    assert FACT not in _system_text(fake.chat_requests[1].messages)
    assert await svc.memories(KEY, MAIN_BRANCH) == []
    assert not any(e.name.startswith("memory.") for e in events.events)
    assert svc.memory is not None and await svc.memory.repo.list_jobs() == []
    dry = await svc.dry_run(KEY, MAIN_BRANCH, "Where is the silver key?")
    assert FACT not in _system_text(dry["messages"])
    # Switched back on, the session remembers again from then on.
    await svc.set_session_option(KEY, "memory", "on")
    fake.script(TAGGED, AGENT)
    await svc.respond(KEY, MAIN_BRANCH, [line("I hide it again")])
    await svc.drain()
    assert [m.text for m in await svc.memories(KEY, MAIN_BRANCH)] == [FACT]


async def test_compat_strict_never_injects(svc: TavernService, fake: FakeOpenAIServer) -> None:
    fake.script(TAGGED, AGENT)
    await svc.respond(KEY, MAIN_BRANCH, [line("I hide the key")])
    await svc.drain()
    assert await svc.memories(KEY, MAIN_BRANCH)  # there is a memory to inject
    await svc.set_session_option(KEY, "mode", "compat_strict")
    dry = await svc.dry_run(KEY, MAIN_BRANCH, "Where is the silver key?")
    assert FACT not in _system_text(dry["messages"])
    fake.script(FakeReply(text="Hm?"))
    await svc.respond(KEY, MAIN_BRANCH, [line("Where is the silver key?")])
    assert FACT not in _system_text(fake.chat_requests[-1].messages)


async def test_a_session_with_memory_off_runs_no_memory_jobs(
    svc: TavernService, fake: FakeOpenAIServer, storage: SqlStorage
) -> None:
    fake.script(TAGGED, AGENT)
    await svc.respond(KEY, MAIN_BRANCH, [line("I hide the key")])
    await svc.drain()
    assert svc.memory is not None
    repo = svc.memory.repo
    # The turn gave its session a compaction and a decay job, both due now.
    session_jobs = {
        (j.job_type, j.scope_key) for j in await repo.list_jobs() if "/" in j.scope_key
    }
    assert {job_type for job_type, _ in session_jobs} == {JobType.COMPACT, JobType.DECAY}
    await svc.set_session_option(KEY, "memory", "off")
    scheduler = MemoryScheduler(
        repo,
        svc.memory,
        clock=svc.memory.clock,
        instance="test",
        memory_on=session_memory_on(storage),
    )
    ran = {(o.state.job_type, o.state.scope_key) for o in await scheduler.tick() if o.state}
    assert ran == {
        (JobType.EXPIRY, j.scope_key) for j in await repo.list_jobs() if "/" not in j.scope_key
    }
    untouched = [j for j in await repo.list_jobs() if (j.job_type, j.scope_key) in session_jobs]
    assert [j.revision for j in untouched] == [0, 0]
    # Memory back on: the session's jobs run again.
    await svc.set_session_option(KEY, "memory", "on")
    ran = {(o.state.job_type, o.state.scope_key) for o in await scheduler.tick() if o.state}
    assert session_jobs <= ran
