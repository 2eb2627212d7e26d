"""Background jobs run exactly once with two real processes up (issue 19): a memory
compaction due in a session is run by one process; the other, ticking meanwhile, finds the
job's lease taken and leaves it.

The summariser's answer is slow (several scheduler ticks), so the second process ticks while
the first still runs the job; every model request names the process that made it (each asks
under its own model name)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from adapters.llm import OfflineChatModel
from adapters.storage import SqlStorage, open_storage
from adapters.storage.memory_repo import SqlMemoryRepository
from bot.app import CONSOLE_REALM
from bot.scheduler import TICK_INTERVAL, build_memory_service
from engine.memory.compaction import MICRO_COUNT_THRESHOLD
from engine.memory.jobs import JobStatus, JobType
from engine.memory.lineage import LineageSegment, Viewpoint
from engine.memory.ports import MemoryQuery
from engine.memory.records import MACRO_TIER, MemoryKind, MemoryScope
from engine.memory.scoping import JobScope
from engine.turns.api import MAIN_BRANCH, SessionKey
from engine.turns.profiles import environment_profile
from engine.turns.service import TavernService
from tests.fakes.openai_server import QUIET_MEMORY_AGENT, FakeOpenAIServer, FakeReply
from tests.test_e2e.console import ConsoleProcess, chat_env
from tests.test_scale.process_support import fresh_database, ready

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]
KEY = SessionKey(platform="console", realm=CONSOLE_REALM, key="compacting")
SUMMARY = "The travellers crossed the river and reached the mill."
SUMMARY_LATENCY_S = 3 * TICK_INTERVAL.total_seconds()
"""How long the summariser's answer takes: several ticks of the other process."""
WAIT_S = 90.0
"""Upper bound for the compaction to be done (never a speed claim)."""


def slow_summary(_: Mapping[str, Any]) -> FakeReply:
    return FakeReply(text=SUMMARY, latency_s=SUMMARY_LATENCY_S)


class Session:
    """The console session's memory, written the way committed turns write it."""

    def __init__(self, storage: SqlStorage) -> None:
        self.storage = storage
        self.memory = build_memory_service(storage, model=None, model_name="fake-model")
        self.view: Viewpoint | None = None

    async def open(self) -> JobScope:
        """Open the console session; the scope of its compaction job."""
        offline = OfflineChatModel(announce=False)
        service = TavernService(
            self.storage,
            model_for=lambda _: offline,
            default_profile=environment_profile(provider="offline", base_url=None, model="x"),
        )
        await service.open_session(KEY)
        ids = await service.parts.sessions.ids(KEY)
        branch = await service.parts.sessions.branch(ids.session_id, MAIN_BRANCH)
        await service.aclose()
        self.view = Viewpoint(
            realm_id=str(ids.realm_id),
            session_id=str(ids.session_id),
            branch_id=str(branch.id),
            floor_no=1,
            lineage=(LineageSegment(branch_id=str(branch.id)),),
        )
        return JobScope(
            realm_id=self.view.realm_id,
            session_id=self.view.session_id,
            scope=MemoryScope.BRANCH,
            scope_id=self.view.branch_id,
        )

    async def commit(self, floor: int) -> None:
        """A committed turn's micro summary; it asks for a compaction run (due now)."""
        assert self.view is not None
        await self.memory.after_commit(
            replace(self.view, floor_no=floor),
            user_text=f"floor {floor}",
            reply_text="ok",
            tag_summaries=[f"On floor {floor} the travellers walked on."],
            run_agent=False,
        )


async def macros(repo: SqlMemoryRepository, view: Viewpoint) -> list[Any]:
    found = await repo.query_records(
        MemoryQuery(realm_id=view.realm_id, kinds=frozenset({MemoryKind.SUMMARY}))
    )
    return [r for r in found if r.tier == MACRO_TIER]


async def test_a_due_compaction_runs_once_with_two_processes(tmp_path: Path, pg_url: str) -> None:
    async with (
        fresh_database(pg_url) as url,
        FakeOpenAIServer(
            responder=slow_summary,
            max_requests=50,
            lifetime_s=170.0,
            memory_agent=QUIET_MEMORY_AGENT,
        ) as fake,
    ):
        storage = await open_storage(url)
        repo = SqlMemoryRepository(storage.engine)
        procs: list[ConsoleProcess] = []
        try:
            session = Session(storage)
            scope_key = (await session.open()).key
            # one micro short of a compaction: the processes' first runs find nothing to do
            for floor in range(1, MICRO_COUNT_THRESHOLD):
                await session.commit(floor)
            for name in ("model-a", "model-b"):
                env = {
                    **chat_env(tmp_path / "unused.db", fake.base_url),
                    "DATABASE_URL": url,
                    "LLM_MODEL": name,
                }
                procs.append(await ConsoleProcess.start(env, "--session", KEY.key, cwd=tmp_path))
            for proc in procs:  # both are up, their schedulers ticking
                await ready(proc)
            async with asyncio.timeout(WAIT_S):
                while True:  # until the processes ran the job requested so far
                    state = await repo.load_job(JobType.COMPACT, scope_key)
                    if state is not None and state.status is JobStatus.SUCCEEDED:
                        break
                    await asyncio.sleep(TICK_INTERVAL.total_seconds() / 4)
            assert fake.chat_requests == []  # nothing was compacted yet
            # The twelfth micro: a compaction is due, in front of both ticking processes.
            assert session.view is not None
            view = session.view
            await session.commit(MICRO_COUNT_THRESHOLD)
            async with asyncio.timeout(WAIT_S):
                while True:  # the job's end is in the database only: look now and then
                    if await macros(repo, view):
                        break
                    await asyncio.sleep(TICK_INTERVAL.total_seconds() / 4)
                while True:
                    state = await repo.load_job(JobType.COMPACT, scope_key)
                    if state is not None and state.status is JobStatus.SUCCEEDED:
                        break
                    await asyncio.sleep(TICK_INTERVAL.total_seconds() / 4)
            # a few more ticks of both processes: a second run would show now
            await asyncio.sleep(3 * TICK_INTERVAL.total_seconds())
            (macro,) = await macros(repo, view)
            assert macro.text.startswith(SUMMARY)
            summaries = [r.body.get("model") for r in fake.chat_requests]
            assert len(summaries) == 1, summaries
            assert summaries[0] in {"model-a", "model-b"}
        finally:
            codes = [await proc.close() for proc in procs]
            await storage.close()
        assert codes == [0] * len(procs)
