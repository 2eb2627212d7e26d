"""What retrieval reads is kept per viewpoint and checked against the realm's revision
(issue 18): another service on the same database (as another process would be), or a write that
bypasses the memory service altogether, is seen by the next retrieval; the service's own writes
patch its copy, which then reads exactly as a fresh read would."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import insert

from adapters.storage.memory_repo import SqlMemoryRepository, record_values
from adapters.storage.tables import RECORD
from engine.memory.plan import LifecycleChange, MutationPlan
from engine.memory.ports import MemoryRepository
from engine.memory.recall_cache import MAX_CACHED_VIEWS, MemoryRevisions, RecallCache
from engine.memory.records import Lifecycle, MemoryKind
from tests.fakes.memory_repo import InMemoryMemoryRepository
from tests.test_memory.helpers import REALM, T0, record, view
from tests.test_memory_storage.support import make_service
from tests.test_storage.support import open_test_storage

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
async def sql(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[object]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with open_test_storage(request.param, tmp_path=tmp_path, pg_url=pg_url) as storage:
        yield storage


async def _block(service, floor: int = 9) -> str:
    return (await service.retrieve(view(floor), "harbour lantern", mark_used=False)).text


async def test_every_change_bumps_the_realm_revision_but_use_marks_do_not(sql) -> None:
    repo = SqlMemoryRepository(sql.engine)
    assert isinstance(repo, MemoryRevisions)
    assert await repo.revision(REALM) is None
    await repo.add_records([record("a", "the lantern"), record("b", "the harbour")])
    first = await repo.revision(REALM)
    assert first == 2  # one per inserted row
    await repo.mark_used(["a", "b"], floor_no=4, at=T0)
    assert await repo.revision(REALM) == first
    change = LifecycleChange(
        record_id="a",
        expected=Lifecycle.ACTIVE,
        new=Lifecycle.DEPRECATED,
        at=T0,
        ended_branch=None,
        ended_floor=None,
    )
    await repo.apply_plan(MutationPlan(changes=(change,)))
    assert await repo.revision(REALM) == first + 1
    await repo.apply_plan(MutationPlan(purge_ids=("a",)))
    assert await repo.revision(REALM) == first + 2
    assert await repo.revision("another-realm") is None


async def test_a_write_by_another_service_or_tool_is_seen_by_the_next_retrieval(sql) -> None:
    mine, _, _, _ = make_service(SqlMemoryRepository(sql.engine))
    other, _, _, _ = make_service(SqlMemoryRepository(sql.engine))
    await other.repo.add_records([record("a", "the lantern in the harbour", floor=1)])
    assert "lantern in the harbour" in await _block(mine)
    assert "lantern in the harbour" in await _block(mine)
    assert (mine.recall.hits, mine.recall.misses) == (1, 1)
    # Another process's memory service writes...
    await other.after_commit(
        view(3), user_text="x", reply_text="y", tag_summaries=["The harbour lantern went out."]
    )
    assert "The harbour lantern went out." in await _block(mine)
    # ...and so does a tool writing rows directly.
    row = record_values(record("raw", "A lantern was found on the harbour wall.", floor=5))
    async with sql.engine.begin() as conn:
        await conn.execute(insert(RECORD), [row])
    assert "found on the harbour wall" in await _block(mine)
    assert mine.recall.misses == 3


async def test_own_writes_patch_the_copy_which_reads_as_a_fresh_read(sql) -> None:
    repo = SqlMemoryRepository(sql.engine)
    service, _, _, clock = make_service(repo, answers=[])
    await repo.add_records([record("a", "the lantern in the harbour", floor=1)])
    await service.retrieve(view(2), "lantern")
    for floor in range(3, 9):
        clock.advance(minutes=5)
        await service.after_commit(
            view(floor),
            user_text="x",
            reply_text="y",
            tag_summaries=[f"At floor {floor} the harbour lantern flickered."],
            run_agent=False,
        )
        await service.retrieve(view(floor + 1), "harbour lantern")
    assert service.recall.misses == 1  # only the first read went to the records
    fresh, _, _, _ = make_service(repo)
    fresh.clock = service.clock
    for query in ("harbour lantern", "floor 5", "nothing shared"):
        ours = await service.retrieve(view(12), query, mark_used=False)
        theirs = await fresh.retrieve(view(12), query, mark_used=False)
        assert (ours.text, ours.unit_ids, ours.scores) == (
            theirs.text,
            theirs.unit_ids,
            theirs.scores,
        )
    copy, _ = await service._lineage(view(12))
    read, _ = await fresh._read_lineage(view(12))
    assert copy == read  # the use marks included


async def test_a_repository_without_revisions_is_read_every_time() -> None:
    repo: MemoryRepository = InMemoryMemoryRepository()
    service, _, _, _ = make_service(repo)
    await repo.add_records([record("a", "the lantern", kind=MemoryKind.FACT, key="lamp")])
    await _block(service)
    await _block(service)
    assert (service.recall.hits, service.recall.misses) == (0, 0)


async def test_the_copies_are_bounded_least_recently_used_first(sql) -> None:
    repo = SqlMemoryRepository(sql.engine)
    await repo.add_records([record("a", "the lantern")])
    cache = RecallCache(size=2)

    async def read():
        return [record("a", "the lantern")], []

    for branch in ("b1", "b2", "b1", "b3"):
        await cache.load(repo, replace(view(3), branch_id=branch, lineage=()), read)
    assert cache.misses == 3 and cache.hits == 1
    assert len(cache._entries) == 2 and MAX_CACHED_VIEWS >= 2


async def test_use_marks_reach_the_copy_at_once_and_storage_when_written(sql) -> None:
    repo = SqlMemoryRepository(sql.engine)
    service, _, _, _ = make_service(repo)
    await repo.add_records([record("a", "the lantern in the harbour", floor=1)])
    await service.retrieve(view(4), "lantern", mark_used=False)
    write = service.note_used(view(4), ["a"], at=T0)
    copy, _ = await service._lineage(view(5))
    assert copy[0].last_used_floor == 4
    assert (await repo.get_records(["a"]))[0].last_used_floor is None  # not written yet
    await write()
    stored = (await repo.get_records(["a"]))[0]
    assert stored.last_used_floor == 4 and stored == copy[0]
