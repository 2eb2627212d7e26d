"""A memory scheduler over a SQLite file database, with a clock the test moves by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from adapters.storage.memory_repo import SqlMemoryRepository
from bot.scheduler import MemoryScheduler
from engine.memory.compaction import CompactionRequest
from engine.memory.records import SequentialIds
from engine.memory.scoping import JobScope
from engine.memory.service import MemoryService, MemorySettings
from engine.memory.summarisers import offline_summariser
from tests.test_memory.helpers import count_tokens
from tests.test_memory_storage.support import EventLog, FakeClock
from tests.test_storage.support import open_test_storage

Summarise = Callable[[CompactionRequest], Awaitable[str]]


@dataclass
class World:
    """The repository, clock and events shared by every scheduler a test starts."""

    repo: SqlMemoryRepository
    clock: FakeClock = field(default_factory=FakeClock)
    events: EventLog = field(default_factory=EventLog)
    ids: SequentialIds = field(default_factory=lambda: SequentialIds("m"))
    summarise: Summarise = offline_summariser
    heads: dict[str, int] = field(default_factory=dict)
    summaries: list[CompactionRequest] = field(default_factory=list)

    def service(self, settings: MemorySettings | None = None) -> MemoryService:
        async def summariser(request: CompactionRequest) -> str:
            self.summaries.append(request)
            return await self.summarise(request)

        return MemoryService(
            self.repo,
            count=count_tokens,
            clock=self.clock,
            events=self.events,
            summariser=summariser,
            settings=settings,
            new_id=self.ids,
        )

    def scheduler(self, settings: MemorySettings | None = None, **kw: Any) -> MemoryScheduler:
        async def floors(scope: JobScope) -> tuple[int | None, tuple[int, ...]]:
            return self.heads.get(scope.scope_id or "", None), ()

        kw.setdefault("instance", "bot")
        kw.setdefault("tick_interval", timedelta(milliseconds=20))
        return MemoryScheduler(
            self.repo, self.service(settings), clock=self.clock, floors=floors, **kw
        )


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    async with open_test_storage("sqlite", tmp_path=tmp_path) as storage:
        yield World(repo=SqlMemoryRepository(storage.engine))
