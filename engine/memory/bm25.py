"""Lexical relevance: a tokenizer that copes with CJK, and Okapi BM25 over memory records.

Latin-script text splits into lower-cased words (light plural/possessive folding, a short stop
list). Runs of CJK characters have no spaces, so they become overlapping character bigrams
(a single character stays a unigram), which matches Chinese and Japanese names and words
without a dictionary.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

BM25_K1 = 1.2
BM25_B = 0.75

_CJK = (
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs
    "\uac00-\ud7af"  # hangul syllables
)
_TOKEN = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+(?:'[^\W_{_CJK}]+)?")
_CJK_RUN = re.compile(rf"[{_CJK}]+")
_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "hers",
        "him",
        "his",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "too",
        "us",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "you",
        "your",
        "not",
        "no",
        "yes",
        "just",
        "very",
        "can",
        "could",
        "would",
        "should",
        "shall",
        "may",
        "might",
        "must",
    ]
)


def tokenize(text: str) -> list[str]:
    """Index terms for ``text``: folded words and CJK character bigrams."""
    terms: list[str] = []
    for match in _TOKEN.finditer(text.lower()):
        word = match.group(0)
        if _CJK_RUN.fullmatch(word):
            if len(word) == 1:
                terms.append(word)
            else:
                terms.extend(word[i : i + 2] for i in range(len(word) - 1))
            continue
        if word.endswith("'s"):
            word = word[:-2]
        if word in _STOP_WORDS:
            continue
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        terms.append(word)
    return terms


@dataclass(frozen=True, slots=True)
class Bm25Index:
    """BM25 statistics over a fixed set of documents (by id)."""

    doc_terms: Mapping[str, Counter[str]]
    doc_lengths: Mapping[str, int]
    doc_freq: Mapping[str, int]
    average_length: float

    @classmethod
    def build(cls, documents: Mapping[str, str]) -> Bm25Index:
        """Index ``{doc_id: text}``."""
        terms = {doc_id: Counter(tokenize(text)) for doc_id, text in documents.items()}
        lengths = {doc_id: sum(counts.values()) for doc_id, counts in terms.items()}
        freq: Counter[str] = Counter()
        for counts in terms.values():
            freq.update(counts.keys())
        average = (sum(lengths.values()) / len(lengths)) if lengths else 0.0
        return cls(terms, lengths, freq, average)

    def idf(self, term: str) -> float:
        """The BM25+ style idf, never negative."""
        total = len(self.doc_terms)
        n = self.doc_freq.get(term, 0)
        return math.log(1.0 + (total - n + 0.5) / (n + 0.5))

    def score(self, doc_id: str, query: Mapping[str, float]) -> float:
        """BM25 of one document for a weighted query ``{term: weight}``."""
        counts = self.doc_terms.get(doc_id)
        if not counts:
            return 0.0
        length_norm = 1.0 - BM25_B + BM25_B * self.doc_lengths[doc_id] / (self.average_length or 1)
        total = 0.0
        for term, weight in query.items():
            tf = counts.get(term, 0)
            if tf:
                total += (
                    weight * self.idf(term) * tf * (BM25_K1 + 1) / (tf + BM25_K1 * length_norm)
                )
        return total


def weighted_query(parts: Sequence[tuple[str, float]]) -> dict[str, float]:
    """Combine texts with weights into one query; a term keeps the highest weight it got."""
    query: dict[str, float] = {}
    for text, weight in parts:
        for term in tokenize(text):
            query[term] = max(query.get(term, 0.0), weight)
    return query


# Sigmoid normalisation of raw BM25 (midpoint, steepness) by the number of query terms, as in
# the reference survey's hybrid scorer: longer queries need a higher raw score to count.
SIGMOID_STEPS: tuple[tuple[int, float, float], ...] = (
    (3, 5.0, 0.7),
    (6, 7.0, 0.6),
    (9, 9.0, 0.5),
    (15, 10.0, 0.5),
)
SIGMOID_LONG_QUERY = (12.0, 0.5)


def sigmoid_params(term_count: int) -> tuple[float, float]:
    """The (midpoint, steepness) for a query of ``term_count`` distinct terms."""
    for limit, midpoint, steepness in SIGMOID_STEPS:
        if term_count <= limit:
            return midpoint, steepness
    return SIGMOID_LONG_QUERY


def normalize_bm25(raw: float, term_count: int) -> float:
    """Map a raw BM25 score into [0, 1) independently of the other documents."""
    if raw <= 0:
        return 0.0
    midpoint, steepness = sigmoid_params(term_count)
    return 1.0 / (1.0 + math.exp(-steepness * (raw - midpoint)))


def relevance_scores(
    documents: Mapping[str, str], query: Mapping[str, float], *, term_count: int | None = None
) -> dict[str, float]:
    """Normalised BM25 relevance of every document to ``query`` (0: no shared term).

    ``term_count`` picks the sigmoid (default: the number of full-weight query terms).
    """
    index = Bm25Index.build(documents)
    if term_count is None:
        term_count = sum(1 for weight in query.values() if weight >= 1.0) or len(query)
    return {doc_id: normalize_bm25(index.score(doc_id, query), term_count) for doc_id in documents}
