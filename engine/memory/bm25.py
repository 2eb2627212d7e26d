"""Lexical relevance: a tokenizer that copes with CJK, and Okapi BM25 over memory records.

Latin-script text splits into lower-cased words (light plural/possessive folding, a short stop
list). Runs of CJK characters have no spaces, so they become overlapping character bigrams
(a single character stays a unigram), which matches Chinese and Japanese names and words
without a dictionary.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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


INDEX_CACHE_SIZE: Final = 16
"""Indexes kept between calls (:func:`cached_index`): a turn ranks the same candidate units
as the turn before it until a record changes, so their index (document frequencies, lengths,
postings) is built once per set of units, not per turn. Few are kept: an index of a large realm
is several dictionaries over every unit, and a set not kept is derived from the last one."""


@dataclass(frozen=True, slots=True)
class Bm25Index:
    """BM25 statistics over a fixed set of documents (by id), with each term's postings (the
    documents holding it, in document order) so a query scores only the documents it can
    match."""

    doc_terms: Mapping[str, Counter[str]]
    doc_lengths: Mapping[str, int]
    doc_freq: Mapping[str, int]
    average_length: float
    postings: Mapping[str, tuple[str, ...]]
    doc_texts: Mapping[str, str]
    _norms: dict[str, float] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(cls, documents: Mapping[str, str]) -> Bm25Index:
        """Index ``{doc_id: text}``."""
        terms = {doc_id: _term_counts(text) for doc_id, text in documents.items()}
        lengths = {doc_id: sum(counts.values()) for doc_id, counts in terms.items()}
        holders: dict[str, list[str]] = {}
        for doc_id, counts in terms.items():
            for term in counts:
                holders.setdefault(term, []).append(doc_id)
        freq = {term: len(ids) for term, ids in holders.items()}
        postings = {term: tuple(ids) for term, ids in holders.items()}
        average = (sum(lengths.values()) / len(lengths)) if lengths else 0.0
        return cls(terms, lengths, freq, average, postings, dict(documents))

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
        """:meth:`score` of every document, each term's idf computed once (same values).

        Only the documents in the query terms' postings are scored; every other one shares no
        term with the query and scores 0. Each term adds its part to the documents that hold
        it, in the query's order: the same sums, in the same order, as :meth:`score` (so the
        same floats), without looking up every query term in every document.
        """
        norms = self.length_norms()
        doc_terms, postings = self.doc_terms, self.postings
        totals: dict[str, float] = {}
        for term, weight in query.items():
            weight_idf = weight * self.idf(term)
            for doc_id in postings.get(term, ()):
                tf = doc_terms[doc_id][term]
                part = weight_idf * tf * (BM25_K1 + 1) / (tf + BM25_K1 * norms[doc_id])
                totals[doc_id] = totals.get(doc_id, 0.0) + part
        found = dict.fromkeys(doc_terms, 0.0)
        found.update(totals)
        return found

    def length_norms(self) -> Mapping[str, float]:
        """Each document's BM25 length normalisation, computed once per index (every query
        of a turn shares it)."""
        norms = self._norms
        if len(norms) != len(self.doc_lengths):
            average = self.average_length or 1
            norms.update(
                (doc_id, 1.0 - BM25_B + BM25_B * length / average)
                for doc_id, length in self.doc_lengths.items()
            )
        return norms


def cached_index(doc_ids: tuple[str, ...], texts: tuple[str, ...]) -> Bm25Index:
    """:meth:`Bm25Index.build` of ``zip(doc_ids, texts)``, kept for the next call with the same
    documents (at most ``INDEX_CACHE_SIZE`` sets; an index is never mutated).

    A set not kept is derived from the kept index most like it (:func:`_base_for`): the
    documents both share keep their term counts, and only the added and removed documents
    change the frequencies and postings, so a turn after a record was written does not
    re-index every unit, even when another chat's or the memory agent's index was built since.
    """
    key = (doc_ids, texts)
    with _INDEX_LOCK:
        index = _INDEXES.get(key)
        if index is not None:
            _INDEXES.move_to_end(key)
            return index
        base = _base_for(doc_ids)
    documents = dict(zip(doc_ids, texts, strict=True))
    index = Bm25Index.build(documents) if base is None else _derived(base, documents)
    with _INDEX_LOCK:
        _INDEXES[key] = index
        while len(_INDEXES) > INDEX_CACHE_SIZE:
            _INDEXES.popitem(last=False)
    return index


_INDEXES: OrderedDict[tuple[tuple[str, ...], tuple[str, ...]], Bm25Index] = OrderedDict()
_INDEX_LOCK = threading.Lock()  # services may rank from worker threads too
_DERIVE_MAX_CHANGED_SHARE = 0.5  # past this share of changed documents a fresh build is cheaper
BASE_SAMPLE_IDS: Final = 8
"""Document ids of a new set looked up in each kept index to choose the one to derive from:
enough to tell one chat's units from another's, few enough to cost nothing."""


def _base_for(doc_ids: Sequence[str]) -> Bm25Index | None:
    """The kept index holding most of a few ids spread over ``doc_ids`` (the most recently
    used first, so a tie goes to it); None when nothing is kept. Any base gives the same
    index (:func:`_derived`), a close one only makes it cheaper."""
    step = max(1, len(doc_ids) // BASE_SAMPLE_IDS)
    sample = doc_ids[::step][:BASE_SAMPLE_IDS]
    best: Bm25Index | None = None
    best_hits = -1
    for index in reversed(_INDEXES.values()):
        hits = sum(1 for doc_id in sample if doc_id in index.doc_texts)
        if hits > best_hits:
            best, best_hits = index, hits
            if hits == len(sample):
                break
    return best


def _derived(base: Bm25Index, documents: Mapping[str, str]) -> Bm25Index:
    """The index of ``documents`` from ``base``'s: the same values as a fresh build."""
    old_texts = base.doc_texts
    added = [d for d, text in documents.items() if old_texts.get(d) != text]
    removed = [d for d, text in old_texts.items() if documents.get(d) != text]
    if len(added) + len(removed) > _DERIVE_MAX_CHANGED_SHARE * max(1, len(documents)):
        return Bm25Index.build(documents)
    # In the documents' order, as a fresh build has them; only the added ones are counted.
    changed = frozenset(added)
    kept_terms, kept_lengths = base.doc_terms, base.doc_lengths
    terms: dict[str, Counter[str]] = {
        doc_id: _term_counts(text) if doc_id in changed else kept_terms[doc_id]
        for doc_id, text in documents.items()
    }
    lengths: dict[str, int] = {
        doc_id: sum(terms[doc_id].values()) if doc_id in changed else kept_lengths[doc_id]
        for doc_id in documents
    }
    freq = dict(base.doc_freq)
    holders: dict[str, list[str]] = {}
    for doc_id in removed:
        for term in base.doc_terms[doc_id]:
            ids = holders.get(term)
            if ids is None:
                ids = holders[term] = list(base.postings[term])
            ids.remove(doc_id)
            freq[term] -= 1
    for doc_id in added:
        for term in terms[doc_id]:
            ids = holders.get(term)
            if ids is None:
                ids = holders[term] = list(base.postings.get(term, ()))
            ids.append(doc_id)
            freq[term] = freq.get(term, 0) + 1
    postings = dict(base.postings)
    for term, ids in holders.items():
        if ids:
            postings[term] = tuple(ids)
        else:
            del postings[term], freq[term]
    average = (sum(lengths.values()) / len(lengths)) if lengths else 0.0
    return Bm25Index(terms, lengths, freq, average, postings, dict(documents))


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
