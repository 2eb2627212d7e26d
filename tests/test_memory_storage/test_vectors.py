"""Unit vectors on SQLite and PostgreSQL, and semantic recall end to end: the memory service on
the SQL storage, the embed job run by the scheduler, the embeddings adapter through the real
openai client against the loopback fake server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.llm.embeddings import OpenAIEmbedder
from adapters.llm.retry import RetryPolicy
from adapters.storage import SqlStorage
from adapters.storage.memory_repo import SqlMemoryRepository
from adapters.storage.vector_repo import UNITS_PER_DELETE, SqlVectorStore
from bot.scheduler import MemoryScheduler, build_memory_service
from engine.memory.embedding import embed_scope
from engine.memory.injection import InjectionPolicy
from engine.memory.jobs import JobStatus, JobType
from engine.memory.plan import MutationPlan
from engine.memory.ports import UnitVector
from engine.memory.service import MemorySettings
from tests.fakes.openai_server import FakeHang, FakeOpenAIServer
from tests.test_memory.helpers import record, view
from tests.test_memory_storage.support import FakeClock
from tests.test_storage.support import open_test_storage

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=BACKENDS)
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SqlStorage]:
    pg_url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    async with open_test_storage(request.param, tmp_path=tmp_path, pg_url=pg_url) as opened:
        yield opened


@pytest.fixture
async def server() -> AsyncIterator[FakeOpenAIServer]:
    async with FakeOpenAIServer(max_requests=20, hang_limit_s=5.0, lifetime_s=60.0) as fake:
        yield fake


def _vector(record_id: str, index: int, model: str, values: tuple[float, ...]) -> UnitVector:
    return UnitVector(
        record_id=record_id, unit_index=index, model=model, text_hash="h" * 16, vector=values
    )


async def test_vectors_are_stored_replaced_and_pruned(storage: SqlStorage) -> None:
    repo, store = SqlMemoryRepository(storage.engine), SqlVectorStore(storage.engine)
    await repo.add_records([record("f-1", "one\ntwo"), record("f-2", "three")])
    await store.save(
        [
            _vector("f-1", 0, "a", (0.5, -0.25, 1.0)),
            _vector("f-1", 1, "a", (1.0, 0.0, 0.0)),
            _vector("f-2", 0, "a", (0.0, 1.0, 0.0)),
        ]
    )
    assert await store.stored(["f-1"]) == {"f-1#0": ("a", "h" * 16), "f-1#1": ("a", "h" * 16)}
    loaded = {v.unit_id: v for v in await store.load(["f-1", "f-2"], "a")}
    assert loaded["f-1#0"].vector == pytest.approx((0.5, -0.25, 1.0))
    assert loaded["f-1#0"].dims == 3 and set(loaded) == {"f-1#0", "f-1#1", "f-2#0"}
    # Another model's vector replaces the unit's old one.
    await store.save([_vector("f-1", 0, "b", (0.0, 0.0, 1.0, 0.0))])
    assert [v.unit_id for v in await store.load(["f-1"], "a")] == ["f-1#1"]
    (replaced,) = await store.load(["f-1"], "b")
    assert replaced.dims == 4
    # A purged record's vectors are swept.
    await repo.apply_plan(MutationPlan(purge_ids=("f-2",)))
    assert await store.prune() == 1
    assert await store.stored(["f-2"]) == {}
    assert await store.prune() == 0


async def test_saving_more_units_than_one_delete_holds(storage: SqlStorage) -> None:
    store = SqlVectorStore(storage.engine)
    many = [_vector("f-big", n, "a", (float(n), 1.0)) for n in range(UNITS_PER_DELETE + 7)]
    await store.save(many)
    await store.save(many)  # replacing them all again keeps one row per unit
    assert len(await store.stored(["f-big"])) == UNITS_PER_DELETE + 7


async def test_semantic_recall_end_to_end(storage: SqlStorage, server: FakeOpenAIServer) -> None:
    embedder = OpenAIEmbedder(
        base_url=server.base_url, model="fake-embed", retry=RetryPolicy(max_retries=0)
    )
    clock = FakeClock()
    settings = MemorySettings(injection=InjectionPolicy(max_tokens=60))
    plain = build_memory_service(
        storage, model=None, model_name="gpt-4o", clock=clock, settings=settings
    )
    service = build_memory_service(
        storage,
        model=None,
        model_name="gpt-4o",
        clock=clock,
        settings=settings,
        embedder=embedder,
    )
    try:
        facts = [
            record("f-car", "Maya's automobile is crimson", key="maya.ride", importance=0.4),
            *(
                record(f"f-{n}", f"Topic {n}: the garden needs water number {n}", importance=0.9)
                for n in range(12)
            ),
        ]
        await service.repo.add_records(facts)
        # A commit asks for the session's embed job (none without embeddings configured).
        await plain.after_commit(view(3), user_text="hi", reply_text="hello", run_agent=False)
        assert await service.repo.load_job(JobType.EMBED, embed_scope(view(3)).key) is None
        await service.after_commit(view(3), user_text="hi", reply_text="hello", run_agent=False)
        key = embed_scope(view(3)).key
        scheduler = MemoryScheduler(service.repo, service, clock=clock)
        outcome = await scheduler.run(JobType.EMBED, key)
        assert outcome.state is not None and outcome.state.status is JobStatus.SUCCEEDED
        assert len(await SqlVectorStore(storage.engine).stored(["f-car"])) == 1

        question = "What colour is her car?"
        alone = await plain.retrieve(view(20), question, mark_used=False)
        fused = await service.retrieve(view(20), question, mark_used=False)
        assert "automobile" not in alone.text
        assert "automobile" in fused.text and fused.unit_ids[0] == "f-car#0"

        # The endpoint hangs at turn time: BM25 alone, within the bounded wait.
        assert service.semantic is not None
        service.semantic.query_timeout_s = 0.2
        server.embedding_script.append(FakeHang())
        slow = await service.retrieve(view(20), "Where is the red auto?", mark_used=False)
        assert "automobile" not in slow.text
        # A service without embeddings runs a leftover embed job as a no-op, not an error.
        before = await SqlVectorStore(storage.engine).stored(["f-car"])
        await plain.run_job(outcome.state)
        assert await SqlVectorStore(storage.engine).stored(["f-car"]) == before
    finally:
        await embedder.aclose()
