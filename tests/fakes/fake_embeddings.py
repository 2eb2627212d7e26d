"""A deterministic stand-in for an embedding model, served by the fake server's ``/embeddings``.

Each text becomes a hashed bag of its BM25 index terms (stemmed, stop words out), each term
first mapped through a small synonym table to a shared concept, projected to
:data:`FAKE_EMBEDDING_DIMS` dimensions with a hash-chosen sign, then normalised. It has no
notion of meaning beyond that table: it only proves the plumbing (a message sharing no word
with a stored fact but naming a synonym of one of its words lands near it, as a real model's
would).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping

from engine.memory.bm25 import tokenize

FAKE_EMBEDDING_DIMS = 256
FAKE_EMBEDDING_MODEL = "fake-embed"
SYNONYMS: Mapping[str, str] = {
    # word -> the concept it shares a slot with
    "automobile": "car",
    "vehicle": "car",
    "auto": "car",
    "feline": "cat",
    "kitten": "cat",
    "canine": "dog",
    "puppy": "dog",
    "physician": "doctor",
    "medic": "doctor",
    "spouse": "partner",
    "husband": "partner",
    "wife": "partner",
    "crimson": "red",
    "scarlet": "red",
    "sea": "ocean",
    "beach": "ocean",
    "job": "work",
    "career": "work",
    "employ": "work",
}


_CONCEPTS = {tokenize(word)[0]: tokenize(concept)[0] for word, concept in SYNONYMS.items()}
"""The table as the tokenizer stems its words (``automobile`` is indexed as ``automobil``)."""


def _slot(term: str) -> tuple[int, float]:
    digest = hashlib.sha256(term.encode("utf-8")).digest()
    index = int.from_bytes(digest[:4], "big") % FAKE_EMBEDDING_DIMS
    return index, 1.0 if digest[4] & 1 else -1.0


def fake_embedding(text: str) -> list[float]:
    """The fake vector of ``text`` (length 1, or all zeros for a text with no terms)."""
    vector = [0.0] * FAKE_EMBEDDING_DIMS
    for term in tokenize(text):
        index, sign = _slot(_CONCEPTS.get(term, term))
        vector[index] += sign
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector
