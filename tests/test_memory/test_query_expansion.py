"""Issue 18: a query word the memory does not hold finds the words it does (written together,
or sharing a long prefix), and never changes a query whose words are all known."""

from __future__ import annotations

import engine.memory.query_expansion as expansion
from engine.memory.bm25 import Bm25Index, stem, tokenize
from engine.memory.injection import InjectionPolicy, rank_units, select_memories
from engine.memory.query_expansion import (
    MIN_COMPOUND_PART_CHARS,
    MIN_PREFIX_CHARS,
    PREFIX_MAP_CACHE_SIZE,
    expand_query,
)
from engine.memory.search import search_memories
from tests.test_memory.helpers import T0, count_tokens, record, view

FACTS = [
    record("trip", "Melanie's son got into an accident during the road trip.", key="m1", floor=4),
    record(
        "necklace", "Caroline got a necklace from her grandmother in Sweden.", key="c1", floor=5
    ),
    record("pottery", "Melanie made a bowl in her pottery class.", key="m2", floor=6),
    record("parade", "Caroline went to the pride parade with friends.", key="c2", floor=7),
]


def _index(*texts: str) -> Bm25Index:
    return Bm25Index.build({str(i): text for i, text in enumerate(texts)})


def _query(text: str) -> dict[str, float]:
    return dict.fromkeys(tokenize(text), 1.0)


def test_a_word_written_together_finds_its_parts() -> None:
    index = _index("the road trip was long", "a quiet day")
    assert expand_query(index, {"roadtrip": 1.0}) == {"roadtrip": 1.0, "road": 1.0, "trip": 1.0}
    # the second part is stemmed like the index's terms
    assert expand_query(index, {"roadtrips": 0.5}) == {"roadtrips": 0.5, "road": 0.5, "trip": 0.5}


def test_a_word_finds_known_words_sharing_its_prefix() -> None:
    index = _index("a gift from her grandmother", "she studies photography", "a grand hall")
    assert expand_query(index, _query("grandma")) == {"grandma": 1.0, "grandmother": 1.0}
    assert expand_query(index, _query("photograph")) == {"photograph": 1.0, "photography": 1.0}


def test_known_words_and_short_words_are_never_expanded() -> None:
    index = _index("the road trip", "her grandmother", "a party at the part", "ab day")
    known = _query("road trip grandmother")
    assert expand_query(index, known) == known
    # shorter than the prefix limit: "part" stays apart from "party" (and the reverse)
    assert len(stem("parts")) < MIN_PREFIX_CHARS
    assert expand_query(index, {"par": 1.0}) == {"par": 1.0}
    assert expand_query(index, {"partyx": 1.0}) == {"partyx": 1.0, "party": 1.0}
    # a part shorter than the compound limit is no part: "abday" is not "ab" + "day"
    assert len("ab") < MIN_COMPOUND_PART_CHARS
    assert expand_query(index, {"abday": 1.0}) == {"abday": 1.0}


def test_the_ranking_finds_the_fact_the_question_words_differently() -> None:
    for question, answer in (
        ("When did Melanie's family go on a roadtrip?", "trip"),
        ("What country is Caroline's grandma from?", "necklace"),
    ):
        ranked = rank_units(FACTS, [], view=view(10), now=T0, message=question)
        assert ranked[0].record.id == answer and ranked[0].relevance == 1.0
        result = select_memories(
            FACTS,
            [],
            view=view(10),
            now=T0,
            message=question,
            count=count_tokens,
            policy=InjectionPolicy(max_tokens=40, max_items=1),
        )
        assert result.record_ids == (answer,)


def test_the_prefix_maps_kept_are_bounded() -> None:
    for i in range(PREFIX_MAP_CACHE_SIZE + 5):
        index = _index(f"grandmother number {i}")
        assert expand_query(index, {"grandma": 1.0})["grandmother"] == 1.0
    assert len(expansion._PREFIX_MAPS) == PREFIX_MAP_CACHE_SIZE


def test_memory_search_finds_the_fact_a_word_stands_for() -> None:
    for query, found in (("grandma", "necklace"), ("roadtrip", "trip")):
        hits = search_memories(FACTS, [], view=view(10), query=query)
        assert [hit.record.id for hit in hits] == [found]
