"""The LoCoMo bench's "tavernbot + embeddings" contender (issue 18): the same played path, the
same dry runs, with the memory service's semantic ranking switched on.

After a path is played, :func:`fused_blocks` gives the service a
:class:`~engine.memory.embedding.SemanticMemory` over an
:class:`~adapters.llm.embeddings.OpenAIEmbedder` (by default the fake server's ``/embeddings``:
a hashed bag of stemmed words with a small synonym table, which only proves the plumbing; with
``--embeddings-url`` and ``--embeddings-model`` any OpenAI-compatible endpoint), runs the
session's ``embed`` job until every unit has a vector, asks every question again as a dry run
and returns the memory blocks. The bench prints the fused figure next to tavernbot's BM25
figure and says whether it is at least as good.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from adapters.llm.embeddings import OpenAIEmbedder
from adapters.llm.retry import RetryPolicy
from adapters.storage.vector_repo import SqlVectorStore
from bench.locomo_data import Question
from bench.locomo_scoring import memory_block
from engine.memory.embedding import SemanticMemory, embed_scope
from engine.memory.lineage import Viewpoint
from engine.memory.service import MemoryService
from engine.turns.api import MAIN_BRANCH, SessionKey
from engine.turns.service import TavernService
from tests.fakes.fake_embeddings import FAKE_EMBEDDING_MODEL

CONTENDER = "tavernbot+embeddings"
MAX_EMBED_RUNS = 20
"""Embed job runs at most, to give every unit of the played path a vector."""
EMBED_TIMEOUT_S = 120.0
"""Per embeddings request (a real model on CPU embeds a batch in seconds)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddingsChoice:
    """Where the bench's embeddings come from; ``url`` None: the fake server's."""

    url: str | None
    model: str

    @property
    def label(self) -> str:
        """How the report names it."""
        return f"{self.model} (fake)" if self.url is None else self.model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--embeddings`` (fake endpoint) or ``--embeddings-url URL --embeddings-model M``."""
    parser.add_argument(
        "--embeddings",
        action="store_true",
        help="also run tavernbot with embeddings (the fake server's, unless a URL is given)",
    )
    parser.add_argument("--embeddings-url", default=None)
    parser.add_argument("--embeddings-model", default=FAKE_EMBEDDING_MODEL)


def choice_from(args: argparse.Namespace) -> EmbeddingsChoice | None:
    """The embeddings the arguments ask for, or None."""
    if not (args.embeddings or args.embeddings_url):
        return None
    return EmbeddingsChoice(url=args.embeddings_url, model=args.embeddings_model)


async def fused_blocks(
    service: TavernService,
    memory: MemoryService,
    *,
    key: SessionKey,
    questions: Sequence[Question],
    choice: EmbeddingsChoice,
    fake_url: str,
    vectors: SqlVectorStore,
) -> list[str]:
    """Embed the played session's units and read each question's memory block again."""
    session = await service.timeline.find_session(key.platform, key.key)
    assert session is not None
    embedder = OpenAIEmbedder(
        base_url=choice.url or fake_url,
        model=choice.model,
        timeout_s=EMBED_TIMEOUT_S,
        retry=RetryPolicy(max_retries=1),
    )
    # The bench measures ranking, not latency: a loaded machine must not turn a question
    # into a BM25-alone fallback, so the query waits as long as a batch may.
    semantic = SemanticMemory(embedder, vectors, query_timeout_s=EMBED_TIMEOUT_S)
    view = Viewpoint(
        realm_id=str(session.realm_id),
        session_id=str(session.id),
        branch_id="0",
        floor_no=0,
    )
    scope = embed_scope(view)
    try:
        for _ in range(MAX_EMBED_RUNS):
            run = await semantic.run(memory.repo, scope, memory.clock.now())
            if not run.remaining:
                break
        memory.semantic = semantic
        blocks = []
        for question in questions:
            prompt = await service.dry_run(key, MAIN_BRANCH, question.text)
            blocks.append(memory_block(prompt["messages"]))
        return blocks
    finally:
        memory.semantic = None
        await embedder.aclose()


def fused_line(path: str, plain: float, fused: float, bm25: float, label: str) -> str:
    """One report line: the fused figure beside tavernbot's and plain BM25's."""
    verdict = "not worse" if fused >= plain - 1e-9 else "WORSE"
    return (
        f"{path}: tavernbot + embeddings [{label}] {fused:.3f} vs tavernbot (BM25 ranking) "
        f"{plain:.3f}, plain BM25 {bm25:.3f}: {verdict}"
    )
