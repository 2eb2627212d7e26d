"""Query words the memory does not hold, matched to words it does (issue 18).

Chat text is informal: a player asks about a "roadtrip" the memory wrote down as a "road trip",
or about "grandma" where the memory says "grandmother". BM25 scores nothing for a query term
no candidate holds, so such a question finds only what its other words find. Before ranking,
each query term that is absent from the candidates' vocabulary is matched to terms that are
present, in two ways, both common in retrieval over informal text:

* **decompounding**: the term is two present terms written together (``roadtrip`` ->
  ``road`` + ``trip``), each part at least :data:`MIN_COMPOUND_PART_CHARS` long;
* **shared prefix**: present terms that share the term's first ``max(MIN_PREFIX_CHARS,
  len(term) - 1)`` characters (``grandma`` -> ``grandmother``, ``photograph`` ->
  ``photography``: the stemmer leaves such pairs apart).

A matched term carries the weight of the query term it stands for; its own idf decides how
much it counts. A term the vocabulary holds is never expanded, so a query whose words are all
known ranks exactly as plain BM25 would.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Final

from engine.memory.bm25 import Bm25Index, stem

MIN_PREFIX_CHARS: Final = 5
"""The shortest shared prefix that matches an absent term to a present one (and the shortest
absent term considered): shorter prefixes join unrelated words (``part`` / ``party``)."""
MIN_COMPOUND_PART_CHARS: Final = 3
"""The shortest part a written-together term is split into (``bday`` is not ``b`` + ``day``)."""
PREFIX_MAP_CACHE_SIZE: Final = 16
"""Vocabularies whose prefix map is kept (one per candidate index, as the index cache)."""

_PrefixMap = Mapping[str, tuple[str, ...]]
_PREFIX_MAPS: OrderedDict[int, tuple[Bm25Index, _PrefixMap]] = OrderedDict()
_LOCK = threading.Lock()  # services may rank from worker threads too


def expand_query(index: Bm25Index, query: Mapping[str, float]) -> dict[str, float]:
    """``query`` with each term absent from ``index`` joined by the present terms it matches
    (see the module's docstring); a term keeps the highest weight it gets."""
    vocabulary = index.doc_freq
    absent = [term for term in query if term not in vocabulary and term.isalpha()]
    if not absent:
        return dict(query)
    expanded = dict(query)
    for term in absent:
        weight = query[term]
        for match in _matches(index, term):
            expanded[match] = max(expanded.get(match, 0.0), weight)
    return expanded


def _matches(index: Bm25Index, term: str) -> list[str]:
    vocabulary = index.doc_freq
    found: list[str] = []
    for cut in range(MIN_COMPOUND_PART_CHARS, len(term) - MIN_COMPOUND_PART_CHARS + 1):
        head, tail = term[:cut], stem(term[cut:])
        if head in vocabulary and tail in vocabulary:
            found.extend((head, tail))
    if len(term) >= MIN_PREFIX_CHARS:
        shared = max(MIN_PREFIX_CHARS, len(term) - 1)
        prefix = term[:shared]
        found.extend(
            known
            for known in _prefix_map(index).get(term[:MIN_PREFIX_CHARS], ())
            if known.startswith(prefix)
        )
    return found


def _prefix_map(index: Bm25Index) -> _PrefixMap:
    """The index's terms by their first :data:`MIN_PREFIX_CHARS` characters, built once per
    index (kept with the index itself, so its id cannot be reused while cached)."""
    key = id(index)
    with _LOCK:
        cached = _PREFIX_MAPS.get(key)
        if cached is not None and cached[0] is index:
            _PREFIX_MAPS.move_to_end(key)
            return cached[1]
    grouped: dict[str, list[str]] = {}
    for term in index.doc_freq:
        if len(term) >= MIN_PREFIX_CHARS:
            grouped.setdefault(term[:MIN_PREFIX_CHARS], []).append(term)
    built = {prefix: tuple(sorted(terms)) for prefix, terms in grouped.items()}
    with _LOCK:
        _PREFIX_MAPS[key] = (index, built)
        _PREFIX_MAPS.move_to_end(key)
        while len(_PREFIX_MAPS) > PREFIX_MAP_CACHE_SIZE:
            _PREFIX_MAPS.popitem(last=False)
    return built
