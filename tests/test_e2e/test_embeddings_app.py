"""The application with ``[llm] embeddings_model``: memory gets the embedder, the scheduler's
``embed`` job stores vectors, and retrieval finds a fact by meaning (fake endpoint)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from adapters.storage.vector_repo import SqlVectorStore
from bot.app import Application
from bot.config import load_settings
from engine.memory.embedding import embed_scope
from engine.memory.jobs import JobStatus, JobType
from engine.memory.lineage import Viewpoint
from engine.memory.records import MemoryKind, MemoryRecord, MemoryScope, MemorySource, Provenance
from tests.fakes.openai_server import QUIET_MEMORY_AGENT, FakeOpenAIServer
from tests.test_e2e.console import chat_env
from tests.test_memory.helpers import T0

EMBED_WAIT_S = 20.0


def _fact(record_id: str, text: str, importance: float, key: str) -> MemoryRecord:
    return MemoryRecord(
        id=record_id,
        kind=MemoryKind.FACT,
        scope=MemoryScope.CHAT,
        scope_id="s-1",
        realm_id="r-1",
        session_id="s-1",
        origin_branch="b-1",
        text=text,
        key=key,
        importance=importance,
        provenance=Provenance(source=MemorySource.MANUAL, floor_no=1),
        created_at=T0,
        created_floor=1,
    )


async def test_the_app_embeds_in_the_background_and_recalls_by_meaning(tmp_path: Path) -> None:
    async with FakeOpenAIServer(
        max_requests=20, lifetime_s=60.0, memory_agent=QUIET_MEMORY_AGENT
    ) as fake:
        env = chat_env(tmp_path / "e.db", fake.base_url)
        (tmp_path / "tavernbot.toml").write_text('[llm]\nembeddings_model = "fake-embed"\n')
        settings = load_settings(tmp_path / "tavernbot.toml", environ=env)
        async with Application(settings) as app:
            memory = app.service.memory
            assert memory is not None and memory.semantic is not None
            assert memory.semantic.model == "fake-embed"
            view = Viewpoint(realm_id="r-1", session_id="s-1", branch_id="b-1", floor_no=2)
            await memory.repo.add_records(
                [
                    _fact("f-car", "Maya's automobile is crimson", 0.4, "maya.ride"),
                    *(
                        _fact(f"f-{n}", f"Topic {n}: the garden needs water {n}", 0.9, f"g{n}")
                        for n in range(12)
                    ),
                ]
            )
            await memory.after_commit(view, user_text="hi", reply_text="hello", run_agent=False)
            key = embed_scope(view).key
            async with asyncio.timeout(EMBED_WAIT_S):  # the scheduler ticks on its own
                while True:
                    state = await memory.repo.load_job(JobType.EMBED, key)
                    if state is not None and state.status is JobStatus.SUCCEEDED:
                        break
                    await asyncio.sleep(0.2)
            assert app.storage is not None
            assert len(await SqlVectorStore(app.storage.engine).stored(["f-car"])) == 1
            found = await memory.retrieve(view, "What colour is her car?", budget=60)
            assert "automobile" in found.text
        assert fake.embedding_requests  # the job's batch and the question
