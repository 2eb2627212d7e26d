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
from functools import lru_cache
from typing import Final

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


TERM_CACHE_SIZE: Final = 16_384
"""Texts whose index terms are kept between calls: a retrieval re-indexes every candidate unit
each turn, and the same units come back turn after turn, so their terms are computed once."""


def tokenize(text: str) -> list[str]:
    """Index terms for ``text``: folded words and CJK character bigrams."""
    return list(_terms(text))


@lru_cache(maxsize=TERM_CACHE_SIZE)
def _terms(text: str) -> tuple[str, ...]:
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
        terms.append(stem(word))
    return tuple(terms)


@lru_cache(maxsize=TERM_CACHE_SIZE)
def _term_counts(text: str) -> Counter[str]:
    """The term counts of ``text`` (shared between indexes: never mutated)."""
    return Counter(_terms(text))


MIN_STEM_CHARS = 3  # a suffix is removed only when at least this much of the word stays
_SUFFIXES = ("ization", "izing", "ized", "izes", "ize", "ing", "ed", "ly")
_VOWELS = frozenset("aeiouy")


def stem(word: str) -> str:
    """A light suffix folding for Latin-script words, so that ``paint``, ``painted`` and
    ``painting`` (or ``hike``, ``hikes``, ``hiking``) index as one term.

    Only consistency matters (the same rule runs on the records and the query): plurals,
    ``-ies``, ``-ing``, ``-ed``, ``-ly``, ``-ize`` forms, a doubled final consonant left by
    a suffix (``running``) and a final ``e`` are folded. Words of three letters or fewer and
    words with non-ASCII letters stay as they are.
    """
    if len(word) <= MIN_STEM_CHARS or not word.isascii() or not word.isalpha():
        return word
    if word.endswith("ies") or word.endswith("ied"):
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in _SUFFIXES:
        base = word[: -len(suffix)]
        if word.endswith(suffix) and len(base) >= MIN_STEM_CHARS and _VOWELS & set(base):
            word = base
            if len(word) > MIN_STEM_CHARS and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # running -> run, stopped -> stop
            break
    if len(word) > MIN_STEM_CHARS and word.endswith("e"):
        word = word[:-1]
    return word


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
        terms = {doc_id: _term_counts(text) for doc_id, text in documents.items()}
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

    def scores(self, query: Mapping[str, float]) -> dict[str, float]:
        """:meth:`score` of every document, each term's idf computed once (same values)."""
        weighted = [(term, weight * self.idf(term)) for term, weight in query.items()]
        average = self.average_length or 1
        found: dict[str, float] = {}
        for doc_id, counts in self.doc_terms.items():
            if not counts:
                found[doc_id] = 0.0
                continue
            length_norm = 1.0 - BM25_B + BM25_B * self.doc_lengths[doc_id] / average
            found[doc_id] = _bm25(weighted, counts, length_norm)
        return found


def _bm25(
    weighted: Sequence[tuple[str, float]], counts: Counter[str], length_norm: float
) -> float:
    total = 0.0
    for term, weight_idf in weighted:
        tf = counts.get(term, 0)
        if tf:
            total += weight_idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * length_norm)
    return total


def weighted_query(parts: Sequence[tuple[str, float]]) -> dict[str, float]:
    """Combine texts with weights into one query; a term keeps the highest weight it got."""
    query: dict[str, float] = {}
    for text, weight in parts:
        for term in tokenize(text):
            query[term] = max(query.get(term, 0.0), weight)
    return query


def relative_scores(index: Bm25Index, query: Mapping[str, float]) -> dict[str, float]:
    """BM25 of every indexed document divided by the best one's, so in [0, 1].

    Relevance is relative to the candidates: a raw BM25 score depends on the query's length
    and the collection, so a fixed curve on it leaves every document of a small collection
    near zero. Here the document that best matches scores 1, whatever its raw score; every
    document scores 0 when none shares a term with ``query``.
    """
    raw = index.scores(query)
    best = max(raw.values(), default=0.0)
    if best <= 0:
        return dict.fromkeys(raw, 0.0)
    return {doc_id: score / best for doc_id, score in raw.items()}


def relevance_scores(documents: Mapping[str, str], query: Mapping[str, float]) -> dict[str, float]:
    """:func:`relative_scores` of ``query`` over ``{doc_id: text}`` (0: no shared term)."""
    return relative_scores(Bm25Index.build(documents), query)
