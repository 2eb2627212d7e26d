"""Hybrid relevance: the BM25 ranking joined with the embedding ranking.

By default (:attr:`FusionMode.BOOST`) BM25's relative relevance stays the scale, and the
embedding ranking's first few units get a bonus by their rank, so a unit whose meaning is
closest to the message rises even when it shares few or no words with it, while BM25 keeps
the order of the rest. Rank, not the cosine itself, sets the bonus: a cosine's scale depends
on the model. The other modes (reciprocal rank fusion and score mixes) were measured on the
LoCoMo bench and lost to it (bench/README.md, issue 18). Everything here is pure: the memory
service supplies the query's vector and the stored unit vectors
(:mod:`engine.memory.embedding`), injection calls :meth:`SemanticSignal.fuse` on its BM25
relevance when a signal is given.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from engine.memory.errors import MemoryPolicyError

RRF_K = 60
"""The usual RRF constant: it damps the difference between the first few ranks."""
SEMANTIC_TOP_K = 50
"""Units of the embedding ranking that take part in the fusion: the rest are as unranked, so
a unit that merely shares a topic far down the list is not made relevant."""
MIN_COSINE = 0.0
"""A unit whose cosine with the query is at most this is not in the embedding ranking."""
SEMANTIC_ONLY_WEIGHT = 0.01
"""In :attr:`FusionMode.FILL`, the relevance of the embedding ranking's first unit among those
BM25 does not match at all (the next ones get less, by their reciprocal rank): below nearly
every unit BM25 matches (relevance is relative to the best match), above every unit neither
signal finds, so the block takes what the words find, then what only the meaning finds."""
BOOST_WEIGHT = 0.3
"""In :attr:`FusionMode.BOOST`, the bonus of the embedding ranking's first unit, on BM25's
relative scale (its best match is 1); the next ones get less, by :data:`BOOST_K`."""
BOOST_K = 0
"""The rank damping of the boost: the unit ranked ``r`` gets ``(BOOST_K + 1) / (BOOST_K + r)``
of :data:`BOOST_WEIGHT`."""
BOOST_TOP_N = 10
"""Units of the embedding ranking that get a boost: a handful, so the meaning lifts the few
units closest to the message and leaves BM25's order of the rest alone."""
CONVEX_ALPHA = 0.5
"""In :attr:`FusionMode.CONVEX`, the embedding's share of the relevance (BM25 has the rest)."""


class FusionMode(StrEnum):
    """How the embedding ranking joins BM25's.

    ``boost`` (the default): BM25 relevance plus, for the embedding ranking's first
    :data:`BOOST_TOP_N` units, ``BOOST_WEIGHT x (BOOST_K + 1) / (BOOST_K + rank)``, divided by
    the best. ``fill``: units BM25 matches keep their BM25 relevance; units sharing no word
    with the message are scored from their rank in the embedding ranking (reciprocal rank, at
    most :data:`SEMANTIC_ONLY_WEIGHT`). ``rrf``: both rankings fused by reciprocal rank for
    every unit. ``rrf_scaled``: RRF's order given BM25's own scores. ``convex``:
    ``(1 - alpha) x BM25 + alpha x cosine`` min-max scaled over the candidates. ``combmnz``:
    the two normalised scores summed, times how many of them found the unit.

    LoCoMo bench, fact path, 500 tokens, all-MiniLM-L6-v2 (BM25 ranking alone 0.779): boost
    0.842, fill 0.779, convex 0.65-0.73, rrf_scaled and combmnz 0.654, rrf 0.592; with the
    fake embedding boost and fill stay at 0.779, every other mode falls.
    """

    BOOST = "boost"
    FILL = "fill"
    RRF = "rrf"
    CONVEX = "convex"
    COMBMNZ = "combmnz"
    RRF_SCALED = "rrf_scaled"


Vector = tuple[float, ...]


def rrf(rankings: Sequence[Sequence[str]], *, k: int = RRF_K) -> dict[str, float]:
    """Reciprocal rank fusion of ``rankings`` (each best first, ids unique within it)."""
    if k < 1:
        raise MemoryPolicyError(f"rrf k must be >= 1, got {k}")
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + rank)
    return fused


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0 when either vector is zero or their lengths differ."""
    if len(a) != len(b) or not a:
        return 0.0
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(math.fsum(x * x for x in a)) * math.sqrt(math.fsum(y * y for y in b))
    return dot / norm if norm > 0 else 0.0


def dot(a: Sequence[float], b: Sequence[float]) -> float:
    """The dot product: the cosine of two vectors of length 1 (0 when lengths differ)."""
    if len(a) != len(b):
        return 0.0
    return float(sum(map(operator.mul, a, b)))


def normalise(vector: Sequence[float]) -> Vector:
    """``vector`` scaled to length 1 (a zero vector stays zero)."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    return tuple(x / norm for x in vector) if norm > 0 else tuple(vector)


def _ranked(scores: Mapping[str, float]) -> list[str]:
    """Ids with a positive score, best first (ties by id, so the order is stable)."""
    return sorted((i for i, s in scores.items() if s > 0), key=lambda i: (-scores[i], i))


@dataclass(frozen=True, slots=True, kw_only=True)
class SemanticSignal:
    """The query's vector and the candidate units' vectors (unit id -> vector), one model,
    each of length 1 (:func:`normalise`; the memory service stores them so), so a cosine is a
    plain dot product: this runs on a turn's path over every candidate unit.

    Units without a vector (not embedded yet, or embedded from older text) simply take no
    part in the embedding ranking; BM25 still ranks them.
    """

    query: Vector
    units: Mapping[str, Vector]
    k: int = RRF_K
    top_k: int = SEMANTIC_TOP_K
    min_cosine: float = MIN_COSINE
    mode: FusionMode = FusionMode.BOOST
    semantic_only_weight: float = SEMANTIC_ONLY_WEIGHT
    alpha: float = CONVEX_ALPHA

    def __post_init__(self) -> None:
        if not 0.0 <= self.alpha <= 1.0:
            raise MemoryPolicyError(f"fusion alpha must be in [0, 1], got {self.alpha}")

    def similarities(self, ids: Sequence[str] | None = None) -> dict[str, float]:
        """Cosine of each unit (of ``ids``, default all) with the query."""
        wanted = self.units.keys() if ids is None else (i for i in ids if i in self.units)
        return {i: dot(self.query, self.units[i]) for i in wanted}

    def fuse(self, relevance: Mapping[str, float]) -> dict[str, float]:
        """BM25 ``relevance`` (unit id -> [0, 1]) joined with the embedding ranking as
        :attr:`mode` says: the same ids, again in [0, 1]."""
        similar = {
            i: s for i, s in self.similarities(list(relevance)).items() if s > self.min_cosine
        }
        semantic = _ranked(similar)[: self.top_k]
        if self.mode is FusionMode.BOOST:
            boosted = dict(relevance)
            for rank, i in enumerate(semantic[:BOOST_TOP_N], start=1):
                boosted[i] += BOOST_WEIGHT * (BOOST_K + 1) / (BOOST_K + rank)
            return _relative(boosted, relevance)
        if self.mode is FusionMode.FILL:
            unmatched = [i for i in semantic if relevance.get(i, 0.0) <= 0]
            extra = rrf([unmatched], k=self.k)
            scale = self.semantic_only_weight * (self.k + 1)
            return {
                i: relevance[i] if relevance[i] > 0 else extra.get(i, 0.0) * scale
                for i in relevance
            }
        if self.mode is FusionMode.RRF:
            fused = rrf([_ranked(dict(relevance)), semantic], k=self.k)
            return _relative(fused, relevance)
        if self.mode is FusionMode.RRF_SCALED:
            return self._rrf_scaled(relevance, semantic)
        meaning = _min_max(similar, semantic)
        if self.mode is FusionMode.CONVEX:
            a = self.alpha
            return {i: (1 - a) * relevance[i] + a * meaning.get(i, 0.0) for i in relevance}
        # CombMNZ: the sum of the normalised scores times how many signals found the unit.
        summed = {
            i: (relevance[i] + meaning.get(i, 0.0))
            * ((relevance[i] > 0) + (meaning.get(i, 0.0) > 0))
            for i in relevance
        }
        return _relative(summed, relevance)

    def _rrf_scaled(self, relevance: Mapping[str, float], semantic: list[str]) -> dict[str, float]:
        """RRF's order with BM25's own scale: the n-th unit of the fused ranking takes the
        n-th best BM25 relevance, so packing (score per damped token) weighs units as it does
        BM25's; units past BM25's matches are scored as :attr:`FusionMode.FILL` scores them."""
        order = _ranked(rrf([_ranked(dict(relevance)), semantic], k=self.k))
        scale = sorted((v for v in relevance.values() if v > 0), reverse=True)
        tail = rrf([order[len(scale) :]], k=self.k)
        weight = self.semantic_only_weight * (self.k + 1)
        scored = dict(zip(order, scale, strict=False))
        return {i: scored.get(i, tail.get(i, 0.0) * weight) for i in relevance}


def _relative(scores: Mapping[str, float], ids: Mapping[str, float]) -> dict[str, float]:
    """``scores`` over ``ids`` divided by the best (all 0 when nothing scores)."""
    best = max(scores.values(), default=0.0)
    if best <= 0:
        return dict.fromkeys(ids, 0.0)
    return {i: scores.get(i, 0.0) / best for i in ids}


def _min_max(similar: Mapping[str, float], ranked: Sequence[str]) -> dict[str, float]:
    """The cosines of the ``ranked`` units min-max scaled over every candidate's (``similar``)
    into [0, 1]: a cosine's scale depends on the model, its spread within the candidates
    does not. A unit outside ``ranked`` scores 0; the worst candidate too."""
    if not ranked:
        return {}
    low, high = min(similar.values()), similar[ranked[0]]
    if high <= low:
        return dict.fromkeys(ranked, 1.0)
    return {i: (similar[i] - low) / (high - low) for i in ranked}
