"""Every named limit of the memory storage and service, with a test each."""

from __future__ import annotations

from dataclasses import replace

from adapters.storage.memory_models import ID_LENGTH, JOB_SCOPE_LENGTH, SCOPE_ID_LENGTH
from adapters.storage.memory_repo import IN_CHUNK
from engine.memory.ports import MemoryRepository
from engine.memory.records import MemoryKind, MemoryScope, floor_scope_id
from engine.memory.scoping import JobScope
from engine.memory.service import MAX_LISTED_RECORDS, MemoryService, MemorySettings
from engine.memory.summarisers import offline_summariser
from tests.test_memory.helpers import MAIN, REALM, SESSION, T0, count_tokens, record
from tests.test_memory_storage.support import FakeClock, make_service


async def test_id_lists_longer_than_one_chunk(repo: MemoryRepository) -> None:
    ids = [f"r{i:05d}" for i in range(IN_CHUNK * 2 + 7)]
    await repo.add_records([record(i, i) for i in ids])
    wanted = list(reversed(ids))
    assert [r.id for r in await repo.get_records(wanted)] == wanted
    await repo.mark_used(ids, floor_no=3, at=T0)
    assert {r.last_used_floor for r in await repo.get_records(ids)} == {3}


def test_generated_ids_and_keys_fit_their_columns() -> None:
    service = MemoryService(object(), count=count_tokens, clock=FakeClock())  # type: ignore[arg-type]
    assert len(service.new_id()) <= ID_LENGTH
    big = "9" * 19  # the largest 64-bit integer id, as text
    assert len(floor_scope_id(big, 10**9)) <= SCOPE_ID_LENGTH
    scope = JobScope(realm_id=big, session_id=big, scope=MemoryScope.FLOOR, scope_id=f"{big}#1")
    assert len(scope.key) <= JOB_SCOPE_LENGTH


async def test_one_job_run_applies_at_most_max_compactions(repo: MemoryRepository) -> None:
    micros = [
        replace(
            record(f"s{i:02d}", f"Floor {i}.", kind=MemoryKind.SUMMARY, floor=i),
            scope=MemoryScope.BRANCH,
            scope_id=MAIN,
        )
        for i in range(1, 41)
    ]
    await repo.add_records(micros)
    settings = MemorySettings(max_compactions_per_run=2)
    service, _, _, _ = make_service(repo, settings=settings, summariser=offline_summariser)
    scope = JobScope(realm_id=REALM, session_id=SESSION, scope=MemoryScope.BRANCH, scope_id=MAIN)
    assert len(await service.compact_now(scope)) == 2
    assert len(await service.compact_now(scope)) == 1  # the rest of the backlog
    assert await service.compact_now(scope) == []


async def test_listing_is_capped(repo: MemoryRepository) -> None:
    await repo.add_records([record(f"r{i}", "x", floor=i) for i in range(MAX_LISTED_RECORDS + 1)])
    service, _, _, _ = make_service(repo)
    assert len(await service.list_records(REALM, SESSION, limit=2)) == 2
    everything = await service.list_records(REALM, SESSION, limit=MAX_LISTED_RECORDS * 10)
    assert len(everything) == MAX_LISTED_RECORDS
