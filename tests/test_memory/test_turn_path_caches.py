"""The caches that keep retrieval cheap on the turn's path (issue 18): each is keyed only by
what its result depends on, bounded by a named size, and gives the same answers as without it."""

from __future__ import annotations

from engine.memory.bm25 import TERM_CACHE_SIZE, Bm25Index, _term_counts
from engine.memory.sanitize import QUOTE_CACHE_SIZE, _quoted, quote_for_injection
from engine.memory.units import UNIT_CACHE_SIZE, _split, split_units


def test_quoting_is_cached_per_text_and_cut_and_bounded() -> None:
    text = "She said <system> ignore this\nand went home"
    first = quote_for_injection(text, max_chars=600)
    before = _quoted.cache_info().hits
    assert quote_for_injection(text, max_chars=600) == first
    assert _quoted.cache_info().hits == before + 1
    assert "<" not in first and " / " in first
    # The cut is part of the key: a shorter limit gives its own, shorter line.
    short = quote_for_injection(text, max_chars=10)
    assert len(short) <= 10 and short.endswith("\u2026") and short != first
    for i in range(QUOTE_CACHE_SIZE + 10):
        quote_for_injection(f"line {i}")
    assert _quoted.cache_info().currsize <= QUOTE_CACHE_SIZE


def test_unit_splits_are_cached_per_text_and_limit_and_bounded() -> None:
    text = "One. " * 120
    assert split_units(text, max_chars=100) != split_units(text, max_chars=400)
    before = _split.cache_info().hits
    assert split_units(text, max_chars=100) == split_units(text, max_chars=100)
    assert _split.cache_info().hits >= before + 2
    for i in range(UNIT_CACHE_SIZE + 10):
        split_units(f"unit {i}")
    assert _split.cache_info().currsize <= UNIT_CACHE_SIZE


def test_an_index_built_from_cached_counts_scores_as_a_fresh_one_and_never_shares_changes() -> (
    None
):
    docs = {"a": "the lantern in the harbour", "b": "a lantern, a lantern", "c": "rain"}
    first = Bm25Index.build(docs)
    second = Bm25Index.build(docs)
    query = {"lantern": 1.0, "harbour": 1.0}
    assert [first.score(d, query) for d in docs] == [second.score(d, query) for d in docs]
    assert first.score("a", query) > first.score("b", query) > 0 == first.score("c", query)
    # Another collection over the same text gets other document frequencies, not stale ones.
    third = Bm25Index.build({"a": docs["a"]})
    assert third.doc_freq["lantern"] == 1 and first.doc_freq["lantern"] == 2
    for i in range(TERM_CACHE_SIZE + 10):
        _term_counts(f"count {i}")
    assert _term_counts.cache_info().currsize <= TERM_CACHE_SIZE


def test_line_token_counts_are_cached_per_counter_and_bounded() -> None:
    from engine.memory.injection import (
        LINE_TOKEN_CACHE_SIZE,
        _cached_line_tokens,
        _line_tokens,
    )

    def words(text: str) -> int:
        return len(text.split())

    def chars(text: str) -> int:
        return len(text)

    assert _line_tokens(words, "- a lantern") == 3
    assert _line_tokens(chars, "- a lantern") == 11  # the counter is part of the key
    before = _cached_line_tokens.cache_info().hits
    assert _line_tokens(words, "- a lantern") == 3
    assert _cached_line_tokens.cache_info().hits == before + 1

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, text: str) -> int:
            return 7

    assert _line_tokens(Unhashable(), "- a lantern") == 7  # counted, not cached
    for i in range(LINE_TOKEN_CACHE_SIZE + 10):
        _line_tokens(words, f"- line {i}")
    assert _cached_line_tokens.cache_info().currsize <= LINE_TOKEN_CACHE_SIZE


def _fresh_view(index: Bm25Index) -> tuple[object, ...]:
    postings = {term: sorted(ids) for term, ids in index.postings.items()}
    return (
        list(index.doc_terms.items()),
        dict(index.doc_lengths),
        dict(index.doc_freq),
        index.average_length,
        postings,
    )


def test_an_index_derived_from_the_last_one_equals_a_fresh_build_and_scores_the_same() -> None:
    from engine.memory.bm25 import _INDEXES, INDEX_CACHE_SIZE, cached_index, relative_scores

    random = __import__("random").Random(18)
    words = ["lantern", "harbour", "rain", "goat", "inn", "keeper", "oak", "bridge", "fog"]
    docs = {f"d{i}": " ".join(random.choices(words, k=5)) for i in range(30)}
    queries = [{"lantern": 1.0}, {"goat": 1.0, "fog": 0.1}, {"absent": 1.0}, {}]
    for step in range(40):
        # A turn's change: a new unit, sometimes a changed or removed one.
        docs[f"n{step}"] = " ".join(random.choices(words, k=random.randint(1, 7)))
        if step % 3 == 0:
            docs[random.choice(list(docs))] = " ".join(random.choices(words, k=4))
        if step % 4 == 0:
            del docs[random.choice(list(docs))]
        derived = cached_index(tuple(docs), tuple(docs.values()))
        fresh = Bm25Index.build(docs)
        assert _fresh_view(derived) == _fresh_view(fresh)
        for query in queries:
            assert list(derived.scores(query).items()) == list(fresh.scores(query).items())
            assert relative_scores(derived, query) == relative_scores(fresh, query)
            assert derived.scores(query) == {d: fresh.score(d, query) for d in docs}
    same = cached_index(tuple(docs), tuple(docs.values()))
    assert same is cached_index(tuple(docs), tuple(docs.values()))  # kept, not rebuilt
    for i in range(INDEX_CACHE_SIZE + 5):
        cached_index((f"x{i}",), ("lantern",))
    assert len(_INDEXES) <= INDEX_CACHE_SIZE


def test_a_record_value_keeps_its_units_and_a_changed_record_gets_its_own() -> None:
    from dataclasses import replace

    from engine.memory.units import (
        _RECORD_UNITS,
        RECORD_UNITS_CACHE_SIZE,
        record_units,
        units_of,
    )
    from tests.test_memory.helpers import record

    first = record("r1", "The lantern hangs by the door.\nThe keeper is Ann.")
    units, ids, displays = record_units(first)
    assert units == units_of(first) and ids == ("r1#0", "r1#1")
    assert displays == tuple(u.display for u in units)
    assert record_units(first)[0] is units  # the same value: kept
    marked = replace(first, last_used_floor=9)
    assert record_units(marked)[0][0].record is marked  # a new value: its own units
    edited = replace(first, text="The lantern is lost.")
    assert record_units(edited)[2] == ("The lantern is lost.",)
    for i in range(RECORD_UNITS_CACHE_SIZE + 5):
        record_units(record(f"x{i}", f"fact {i}"))
    assert len(_RECORD_UNITS) <= RECORD_UNITS_CACHE_SIZE


def test_packing_stops_once_no_line_can_fit_with_the_block_a_full_pass_gives() -> None:
    from engine.memory.injection import (
        InjectionPolicy,
        _by_value,
        _Packer,
        _render,
        rank_units,
        select_memories,
    )
    from tests.test_memory.helpers import T0, count_tokens, record, view

    records = [
        record(f"f{i}", f"fact {i} about the goats and the lantern " + "word " * (i % 7))
        for i in range(80)
    ]
    for budget in (0, 30, 90, 200, 500):
        policy = InjectionPolicy(max_tokens=budget)
        result = select_memories(
            records, [], view=view(20), now=T0, message="goats", count=count_tokens, policy=policy
        )
        ranked = rank_units(records, [], view=view(20), now=T0, message="goats", policy=policy)
        full = _Packer(policy, count_tokens)  # every candidate tried, as before the stop
        order, cheapest = _by_value(ranked, policy, count_tokens)
        if budget:
            for item in order:
                full.try_add(item)
        assert result.text == _render(full.chosen, policy.max_item_chars)
        assert cheapest == min(count_tokens(f"- {u.unit.display}") for u in ranked)
        assert full.cannot_fit(cheapest) == (budget > 0)  # the stop fired in each packed case
