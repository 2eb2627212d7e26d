"""Semantic memory in the engine: RRF fusion, the embed job, the turn-time query vector."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import replace

import pytest

from engine.errors import GenerationError
from engine.memory import embedding as emb
from engine.memory.embedding import (
    EMBED_BATCH_SIZE,
    MAX_EMBED_UNITS_PER_RUN,
    MAX_QUERY_CHARS,
    QUERY_CACHE_SIZE,
    QUERY_EMBED_TIMEOUT_S,
    VECTOR_CACHE_RECORDS,
    SemanticMemory,
    embed_scope,
    pending_units,
    unit_hash,
)
from engine.memory.errors import MemoryPolicyError
from engine.memory.fusion import (
    BOOST_K,
    BOOST_TOP_N,
    BOOST_WEIGHT,
    CONVEX_ALPHA,
    RRF_K,
    SEMANTIC_ONLY_WEIGHT,
    SEMANTIC_TOP_K,
    FusionMode,
    SemanticSignal,
    cosine,
    dot,
    normalise,
    rrf,
)
from engine.memory.injection import InjectionPolicy, select_memories
from engine.memory.jobs import JobType
from engine.memory.records import Lifecycle, MemoryKind
from engine.memory.scoping import JobScope
from engine.memory.units import units_of
from tests.fakes.fake_embeddings import fake_embedding
from tests.fakes.memory_repo import InMemoryMemoryRepository
from tests.fakes.vector_store import InMemoryVectorStore
from tests.test_memory.helpers import T0, count_tokens, record, view


class CountingEmbedder:
    """The fake embedding in-process, counting calls; ``fail``/``hang`` to misbehave."""

    def __init__(self, model: str = "fake-embed") -> None:
        self.model = model
        self.calls: list[list[str]] = []
        self.fail: Exception | None = None
        self.hang = False

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        self.calls.append(list(texts))
        if self.hang:
            await asyncio.sleep(3600)
        if self.fail is not None:
            raise self.fail
        return [tuple(fake_embedding(t)) for t in texts]


def _semantic(
    repo: InMemoryMemoryRepository, embedder: CountingEmbedder | None = None, **kw: object
) -> tuple[SemanticMemory, InMemoryVectorStore, CountingEmbedder]:
    store = InMemoryVectorStore(lambda: set(repo.records))
    embedder = embedder or CountingEmbedder()
    return SemanticMemory(embedder, store, **kw), store, embedder  # type: ignore[arg-type]


SCOPE = embed_scope(view(1))


# ---------------------------------------------------------------- fusion


def test_rrf_sums_reciprocal_ranks_with_k() -> None:
    fused = rrf([["a", "b"], ["b", "c"]], k=RRF_K)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61) and fused["c"] == pytest.approx(1 / 62)
    assert max(fused, key=fused.__getitem__) == "b"
    assert rrf([]) == {}
    with pytest.raises(MemoryPolicyError):
        rrf([["a"]], k=0)


def test_cosine_and_normalise() -> None:
    assert cosine((1.0, 0.0), (2.0, 0.0)) == pytest.approx(1.0)
    assert cosine((1.0, 0.0), (0.0, 3.0)) == 0.0
    assert cosine((1.0,), (1.0, 0.0)) == 0.0 and cosine((0.0, 0.0), (1.0, 0.0)) == 0.0
    assert normalise((3.0, 4.0)) == pytest.approx((0.6, 0.8))
    assert dot((0.6, 0.8), (0.6, 0.8)) == pytest.approx(1.0) and dot((1.0,), (1.0, 0.0)) == 0.0


def test_fill_keeps_bm25_and_adds_what_only_the_embedding_finds() -> None:
    relevance = {"bm25#0": 1.0, "other#0": 0.5, "semantic#0": 0.0, "next#0": 0.0, "none#0": 0.0}
    units = {
        "semantic#0": (1.0, 0.0),
        "next#0": normalise((1.0, 0.5)),
        "bm25#0": (0.0, 1.0),
        "none#0": (-1.0, 0.0),
    }
    fused = SemanticSignal(query=(1.0, 0.0), units=units, mode=FusionMode.FILL).fuse(relevance)
    assert fused["bm25#0"] == 1.0 and fused["other#0"] == 0.5  # BM25's own scores
    assert fused["semantic#0"] == pytest.approx(SEMANTIC_ONLY_WEIGHT)
    assert fused["next#0"] == pytest.approx(SEMANTIC_ONLY_WEIGHT * (RRF_K + 1) / (RRF_K + 2))
    assert fused["none#0"] == 0.0  # a negative cosine is not in the embedding ranking
    # What only the meaning finds goes after what the words find, before what neither does.
    assert 0 < fused["semantic#0"] < min(fused["bm25#0"], fused["other#0"]) / 10
    nothing = SemanticSignal(query=(1.0, 0.0), units={}, mode=FusionMode.FILL).fuse({"a#0": 0.0})
    assert nothing == {"a#0": 0.0}


def test_boost_lifts_the_embeddings_first_few_on_bm25s_scale() -> None:
    fused = _three_units(FusionMode.BOOST)  # the default mode
    assert SemanticSignal(query=(1.0,), units={}).mode is FusionMode.BOOST
    # embedding ranks c, b, a, d: bonuses w, w*3/4, w*3/5, w*3/6 (w = BOOST_WEIGHT, k = 2)
    raw = {
        "a#0": 1.0 + BOOST_WEIGHT * (BOOST_K + 1) / (BOOST_K + 3),
        "b#0": 0.5 + BOOST_WEIGHT * (BOOST_K + 1) / (BOOST_K + 2),
        "c#0": BOOST_WEIGHT,
        "d#0": BOOST_WEIGHT * (BOOST_K + 1) / (BOOST_K + 4),
    }
    best = raw["a#0"]
    assert fused == pytest.approx({i: v / best for i, v in raw.items()})
    # Only the first BOOST_TOP_N units of the embedding ranking get a bonus.
    ids = [f"u{i}#0" for i in range(BOOST_TOP_N + 3)]
    units = {uid: normalise((1.0, 0.01 * n)) for n, uid in enumerate(ids)}
    boosted = SemanticSignal(query=(1.0, 0.0), units=units).fuse(dict.fromkeys(ids, 0.5))
    assert sum(1 for v in boosted.values() if v > boosted[ids[-1]]) == BOOST_TOP_N
    assert (
        boosted[ids[BOOST_TOP_N]] == boosted[ids[-1]] == pytest.approx(0.5 / (0.5 + BOOST_WEIGHT))
    )


def test_rrf_mode_fuses_both_rankings_for_every_unit() -> None:
    relevance = {"bm25#0": 1.0, "other#0": 0.5, "semantic#0": 0.0, "none#0": 0.0}
    signal = SemanticSignal(
        query=(1.0, 0.0),
        units={"semantic#0": (1.0, 0.0), "other#0": (1.0, 0.0), "none#0": (-1.0, 0.0)},
        mode=FusionMode.RRF,
    )
    fused = signal.fuse(relevance)
    assert fused["other#0"] == 1.0  # second for BM25, first (tied) for the embedding
    assert 0 < fused["semantic#0"] < 1 and 0 < fused["bm25#0"] < 1
    assert fused["none#0"] == 0.0


def _three_units(mode: FusionMode, alpha: float = CONVEX_ALPHA) -> dict[str, float]:
    """BM25 finds a and b; the embedding ranks c (cosine 1), b (0.8), a (0.6), d (0.2)."""
    relevance = {"a#0": 1.0, "b#0": 0.5, "c#0": 0.0, "d#0": 0.0}
    units = {
        "c#0": (1.0, 0.0),
        "b#0": (0.8, 0.6),
        "a#0": (0.6, 0.8),
        "d#0": (0.2, 0.96**0.5),
    }
    return SemanticSignal(query=(1.0, 0.0), units=units, mode=mode, alpha=alpha).fuse(relevance)


def test_convex_mixes_bm25_with_the_min_max_scaled_cosine() -> None:
    fused = _three_units(FusionMode.CONVEX, alpha=0.4)
    # cosines min-max scaled over the candidates: c 1, b 0.75, a 0.5, d 0.
    assert fused["a#0"] == pytest.approx(0.6 * 1.0 + 0.4 * 0.5)
    assert fused["b#0"] == pytest.approx(0.6 * 0.5 + 0.4 * 0.75)
    assert fused["c#0"] == pytest.approx(0.4) and fused["d#0"] == 0.0
    assert _three_units(FusionMode.CONVEX, alpha=0.0)["c#0"] == 0.0  # BM25 alone
    assert _three_units(FusionMode.CONVEX, alpha=1.0)["c#0"] == 1.0  # the embedding alone
    for alpha in (-0.1, 1.1):
        with pytest.raises(MemoryPolicyError):
            SemanticSignal(query=(1.0,), units={}, alpha=alpha)


def test_combmnz_rewards_units_both_signals_find() -> None:
    fused = _three_units(FusionMode.COMBMNZ)
    # sums 1.5, 1.25, 1.0 (c, by the embedding alone: counted once); a and b counted twice.
    assert fused["a#0"] == 1.0
    assert fused["b#0"] == pytest.approx(2 * 1.25 / 3.0)
    assert fused["c#0"] == pytest.approx(1.0 / 3.0) and fused["d#0"] == 0.0


def test_rrf_scaled_keeps_bm25s_scores_in_the_fused_order() -> None:
    fused = _three_units(FusionMode.RRF_SCALED)
    # fused order a (1/61 + 1/63), b (2/62), c (1st of the embedding only), d.
    assert fused["a#0"] == 1.0 and fused["b#0"] == 0.5  # BM25's own values, in RRF's order
    relevance = {"a#0": 1.0, "b#0": 0.2}
    units = {"b#0": (1.0, 0.0), "a#0": (0.0, 1.0)}  # the embedding ranks only b
    swapped = SemanticSignal(query=(1.0, 0.0), units=units, mode=FusionMode.RRF_SCALED)
    assert swapped.fuse(relevance) == {"b#0": 1.0, "a#0": 0.2}  # b (2 signals) leads now
    assert fused["c#0"] == pytest.approx(SEMANTIC_ONLY_WEIGHT)  # past BM25's matches: as fill
    assert 0 < fused["d#0"] < fused["c#0"]


def test_only_the_top_k_of_the_embedding_ranking_take_part() -> None:
    ids = [f"u{i}#0" for i in range(SEMANTIC_TOP_K + 5)]
    units = {uid: normalise((1.0, 0.01 * n)) for n, uid in enumerate(ids)}  # falls with n
    for mode in (m for m in FusionMode if m is not FusionMode.BOOST):  # boost: BOOST_TOP_N
        signal = SemanticSignal(query=(1.0, 0.0), units=units, mode=mode)
        fused = signal.fuse(dict.fromkeys(ids, 0.0))
        assert sum(1 for v in fused.values() if v > 0) == SEMANTIC_TOP_K
        assert fused[ids[0]] == max(fused.values()) and fused[ids[-1]] == 0.0


# ---------------------------------------------------------------- the embed job


async def test_the_job_embeds_every_unit_once_in_bounded_batches() -> None:
    repo = InMemoryMemoryRepository()
    long_text = "\n".join(f"line {n} about the harbour" for n in range(EMBED_BATCH_SIZE + 10))
    await repo.add_records(
        [
            record("f-1", "Maya's automobile is crimson", key="maya.ride"),
            record("s-1", long_text, kind=MemoryKind.SUMMARY),
            record("f-old", "forgotten", lifecycle=Lifecycle.DEPRECATED),
        ]
    )
    semantic, store, embedder = _semantic(repo)
    run = await semantic.run(repo, SCOPE, T0)
    assert run.embedded == 1 + EMBED_BATCH_SIZE + 10 and run.remaining == 0
    assert max(len(c) for c in embedder.calls) == EMBED_BATCH_SIZE
    assert "f-old#0" not in store.vectors
    unit = units_of(repo.records["f-1"])[0]
    stored = store.vectors[unit.id]
    assert stored.model == "fake-embed" and stored.text_hash == unit_hash(unit.display)
    assert stored.vector == pytest.approx(fake_embedding(unit.display))
    embedder.calls.clear()
    again = await semantic.run(repo, SCOPE, T0)
    assert again.embedded == 0 and embedder.calls == []


async def test_a_model_change_re_embeds_and_replaces_the_old_vectors() -> None:
    repo = InMemoryMemoryRepository()
    await repo.add_records([record("f-1", "one\ntwo"), record("f-2", "three")])
    semantic, store, _ = _semantic(repo)
    await semantic.run(repo, SCOPE, T0)
    newer = SemanticMemory(CountingEmbedder("other-model"), store)
    run = await newer.run(repo, SCOPE, T0)
    assert run.embedded == 3
    assert {v.model for v in store.vectors.values()} == {"other-model"}
    assert len(store.vectors) == 3


async def test_changed_text_is_re_embedded_and_purged_records_pruned() -> None:
    repo = InMemoryMemoryRepository()
    await repo.add_records([record("f-1", "old text"), record("f-2", "kept")])
    semantic, store, _ = _semantic(repo)
    await semantic.run(repo, SCOPE, T0)
    repo.records["f-1"] = replace(repo.records["f-1"], text="new text")
    del repo.records["f-2"]
    stored = await store.stored(["f-1", "f-2"])
    assert [u.id for u in pending_units(repo.records.values(), stored, "fake-embed")] == ["f-1#0"]
    run = await semantic.run(repo, SCOPE, T0)
    assert run.embedded == 1 and set(store.vectors) == {"f-1#0"}
    assert store.vectors["f-1#0"].text_hash == unit_hash("new text")


async def test_one_run_embeds_at_most_its_limit() -> None:
    repo = InMemoryMemoryRepository()
    await repo.add_records([record("f-1", "\n".join(f"fact {n}" for n in range(30)))])
    semantic, _, _ = _semantic(repo, max_units_per_run=8, batch_size=3)
    first = await semantic.run(repo, SCOPE, T0)
    assert (first.embedded, first.remaining) == (8, 22)
    assert MAX_EMBED_UNITS_PER_RUN >= EMBED_BATCH_SIZE
    with pytest.raises(MemoryPolicyError):
        _semantic(repo, batch_size=0)


async def test_a_failing_endpoint_fails_the_run_for_the_job_to_retry() -> None:
    repo = InMemoryMemoryRepository()
    await repo.add_records([record("f-1", "text")])
    semantic, store, embedder = _semantic(repo)
    embedder.fail = GenerationError("embeddings server down", retryable=True)
    with pytest.raises(GenerationError):
        await semantic.run(repo, SCOPE, T0)
    assert store.vectors == {}


# ---------------------------------------------------------------- turn time


async def test_query_vectors_are_cached_and_cut() -> None:
    repo = InMemoryMemoryRepository()
    semantic, _, embedder = _semantic(repo, cache_size=2)
    first = await semantic.query_vector("  where is the ship?  ")
    assert first is not None and await semantic.query_vector("where is the ship?") == first
    assert len(embedder.calls) == 1
    await semantic.query_vector("b")
    await semantic.query_vector("c")  # evicts the oldest
    await semantic.query_vector("where is the ship?")
    assert len(embedder.calls) == 4
    await semantic.query_vector("x" * (MAX_QUERY_CHARS + 50))
    assert len(embedder.calls[-1][0]) == MAX_QUERY_CHARS
    assert await semantic.query_vector("   ") is None
    assert QUERY_CACHE_SIZE > 0


async def test_a_slow_or_failing_endpoint_falls_back_to_bm25_and_logs_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    repo = InMemoryMemoryRepository()
    semantic, _, embedder = _semantic(repo, query_timeout_s=0.05)
    embedder.hang = True
    with caplog.at_level(logging.WARNING, logger=emb.__name__):
        assert await semantic.query_vector("one") is None
        embedder.hang, embedder.fail = False, GenerationError("boom")
        assert await semantic.signal([record("f", "x")], "two") is None
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "within 0.05s" in warnings[0].getMessage()
    assert "\n" not in warnings[0].getMessage()
    embedder.fail = None
    assert await semantic.query_vector("three") is not None
    assert QUERY_EMBED_TIMEOUT_S <= 5


async def test_injection_with_the_signal_finds_a_fact_sharing_no_word() -> None:
    repo = InMemoryMemoryRepository()
    records = [
        record("f-car", "Maya's automobile is crimson", key="maya.ride", importance=0.4),
        *(
            record(f"f-{n}", f"Topic {n}: the garden needs water number {n}", importance=0.9)
            for n in range(12)
        ),
    ]
    await repo.add_records(records)
    semantic, _, _ = _semantic(repo)
    await semantic.run(repo, SCOPE, T0)
    question = "What colour is her car?"
    policy = InjectionPolicy(max_tokens=60)
    common = {"view": view(20), "now": T0, "message": question, "count": count_tokens}
    alone = select_memories(records, [], policy=policy, **common)  # type: ignore[arg-type]
    signal = await semantic.signal(records, question)
    assert signal is not None
    fused = select_memories(records, [], policy=policy, semantic=signal, **common)  # type: ignore[arg-type]
    assert "automobile" not in alone.text
    assert "automobile" in fused.text and fused.unit_ids[0] == "f-car#0"


def test_the_embed_scope_is_one_per_session() -> None:
    scope = JobScope.parse(SCOPE.key)
    assert scope == SCOPE and scope.session_id == view(1).session_id
    assert JobType.EMBED.value == "embed"


async def test_turns_read_a_record_s_vectors_once_until_its_text_changes() -> None:
    repo = InMemoryMemoryRepository()
    await repo.add_records([record("f-1", "Maya's automobile"), record("f-2", "the harbour")])
    semantic, store, _ = _semantic(repo)
    await semantic.run(repo, SCOPE, T0)
    await repo.add_records([record("f-3", "a new fact, not embedded yet")])
    records = list(repo.records.values())
    first = await semantic.signal(records, "car")
    assert first is not None and set(first.units) == {"f-1#0", "f-2#0"}
    second = await semantic.signal(records, "car")
    assert second is not None and second.units == first.units
    assert store.loaded == [["f-1", "f-2", "f-3"], ["f-3"]]  # only the unembedded one again
    changed = replace(repo.records["f-1"], text="Maya's bicycle")
    third = await semantic.signal([changed, repo.records["f-2"]], "car")
    assert third is not None and set(third.units) == {"f-2#0"}  # a stale vector is not used
    await semantic.signal([changed], "car")
    assert store.loaded[-1] == ["f-1"]  # dropped from the cache, read again
    assert VECTOR_CACHE_RECORDS >= 1000
