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
