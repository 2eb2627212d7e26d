"""World info activation: one test per rule (keys, depth, logic, probability, filters...)."""

from __future__ import annotations

import pytest

from engine.formats.worldbook import (
    LOGIC_AND_ALL,
    LOGIC_AND_ANY,
    LOGIC_NOT_ALL,
    LOGIC_NOT_ANY,
    CharacterFilter,
)
from engine.prompt.wi_sources import ScanSources, WorldInfoSettings
from tests.test_worldinfo.helpers import book, entry, scan, uids


def test_primary_key_in_scan_window_activates() -> None:
    b = book(entry(1, "dragon"), entry(2, "castle"))
    assert uids(scan(b, ["a castle far away", "hello", "I see a Dragon"])) == {1}


def test_default_scan_depth_is_two_messages() -> None:
    b = book(entry(1, "dragon"))
    assert uids(scan(b, ["dragon", "x", "y"])) == set()
    assert uids(scan(b, ["dragon", "x"])) == {1}
    deep = WorldInfoSettings(scan_depth=3)
    assert uids(scan(b, ["dragon", "x", "y"], settings=deep)) == {1}


def test_entry_scan_depth_overrides_and_zero_scans_nothing() -> None:
    b = book(entry(1, "dragon", scan_depth=3), entry(2, "x", scan_depth=0))
    assert uids(scan(b, ["dragon", "x", "y"])) == {1}


def test_constant_and_disabled() -> None:
    b = book(entry(1, constant=True), entry(2, "x", disable=True), entry(3))
    assert uids(scan(b, ["x"])) == {1}


def test_case_sensitivity_global_and_per_entry() -> None:
    b = book(entry(1, "Dragon"), entry(2, "Dragon", case_sensitive=True))
    assert uids(scan(b, ["a dragon"])) == {1}
    strict = WorldInfoSettings(case_sensitive=True)
    assert uids(
        scan(book(entry(1, "Dragon", case_sensitive=False)), ["a dragon"], settings=strict)
    ) == {1}
    assert uids(scan(book(entry(1, "Dragon")), ["a dragon"], settings=strict)) == set()


def test_whole_words() -> None:
    b = book(entry(1, "cat", match_whole_words=True), entry(2, "cat"))
    assert uids(scan(b, ["concatenate"])) == {2}
    assert uids(scan(b, ["the cat."])) == {1, 2}


def test_regex_key_tests_raw_text() -> None:
    b = book(entry(1, "/dra+gon/i"), entry(2, "/^x$/"))
    assert uids(scan(b, ["DRAAAGON"])) == {1}


def test_names_are_part_of_the_scan_text() -> None:
    b = book(entry(1, "/\\x01Bob:/"))
    assert uids(scan(b, ["Bob: hi"])) == {1}
    assert uids(scan(b, ["Alice: hi"])) == set()


@pytest.mark.parametrize(
    ("logic", "text", "active"),
    [
        (LOGIC_AND_ANY, "key a", True),
        (LOGIC_AND_ANY, "key", False),
        (LOGIC_NOT_ALL, "key a", True),
        (LOGIC_NOT_ALL, "key a b", False),
        (LOGIC_NOT_ANY, "key", True),
        (LOGIC_NOT_ANY, "key b", False),
        (LOGIC_AND_ALL, "key a b", True),
        (LOGIC_AND_ALL, "key a", False),
    ],
)
def test_secondary_logic(logic: int, text: str, active: bool) -> None:
    e = entry(1, "key", secondary_keys=("a", "b"), selective=True, selective_logic=logic)
    # Secondary keys are whole words here so "a" does not hit inside "key".
    settings = WorldInfoSettings(match_whole_words=True)
    assert (uids(scan(book(e), [text], settings=settings)) == {1}) is active


def test_secondary_keys_ignored_when_not_selective() -> None:
    e = entry(1, "key", secondary_keys=("zzz",), selective=False)
    assert uids(scan(book(e), ["key"])) == {1}


def test_probability_is_seeded_and_repeatable() -> None:
    entries = [entry(i, "go", probability=50) for i in range(40)]
    first = uids(scan(book(*entries), ["go"], seed=7))
    again = uids(scan(book(*entries), ["go"], seed=7))
    other = uids(scan(book(*entries), ["go"], seed=8))
    assert first == again and 0 < len(first) < 40 and first != other


def test_probability_zero_and_probability_off() -> None:
    b = book(entry(1, "go", probability=0), entry(2, "go", probability=0, use_probability=False))
    assert uids(scan(b, ["go"])) == {2}


def test_generation_type_triggers() -> None:
    b = book(entry(1, "go", triggers=("continue",)), entry(2, "go"))
    assert uids(scan(b, ["go"])) == {2}
    assert uids(scan(b, ["go"], generation_type="continue")) == {1, 2}


def test_character_filter_include_and_exclude() -> None:
    only = entry(1, constant=True, character_filter=CharacterFilter(names=("Ann",)))
    never = entry(
        2, constant=True, character_filter=CharacterFilter(names=("Ann",), is_exclude=True)
    )
    tagged = entry(3, constant=True, character_filter=CharacterFilter(tags=("elf",)))
    b = book(only, never, tagged)
    assert uids(scan(b, ["x"], character_name="Ann")) == {1}
    assert uids(scan(b, ["x"], character_name="Bo", character_tags=("elf",))) == {2, 3}


def test_decorators_activate_and_dont_activate() -> None:
    b = book(
        entry(1, content="@@activate\nalways here"),
        entry(2, "go", content="@@dont_activate\nnever"),
    )
    result = scan(b, ["go"])
    assert uids(result) == {1} and result.activated[0].content == "always here"


def test_opt_in_sources_and_injections_are_scanned() -> None:
    b = book(entry(1, "elf", match_character_description=True), entry(2, "note"), entry(3, "elf"))
    sources = ScanSources(character_description="an elf", injections=("a note",))
    assert uids(scan(b, ["hello"], sources=sources)) == {1, 2}


def test_forced_entries_activate() -> None:
    assert uids(scan(book(entry(1, "zzz")), ["x"], forced={"B.1"})) == {1}


def test_min_activations_scans_deeper() -> None:
    b = book(entry(1, "dragon"))
    settings = WorldInfoSettings(scan_depth=1, min_activations=1)
    assert uids(scan(b, ["dragon", "x", "y"], settings=settings)) == {1}
    # As in SillyTavern the depth is checked before it grows, so the cap is passed by one.
    capped = WorldInfoSettings(scan_depth=1, min_activations=1, min_activations_depth_max=1)
    assert uids(scan(b, ["dragon", "x", "y"], settings=capped)) == set()


def test_budget_drops_entries_past_it_but_not_ignore_budget() -> None:
    big = "word " * 100  # 125 tokens with the default estimate
    b = book(
        entry(1, constant=True, content=big, order=300),
        entry(2, constant=True, content=big, order=200),
        entry(3, constant=True, content="tiny", order=100, ignore_budget=True),
    )
    result = scan(b, ["x"], max_context=1000)  # 25% = 250 tokens
    assert uids(result) == {1, 3} and result.overflowed and result.budget == 250
    capped = scan(b, ["x"], max_context=100_000, settings=WorldInfoSettings(budget_cap=100))
    assert uids(capped) == {3} and capped.budget == 100


def test_several_books_and_strategy() -> None:
    char = book(entry(1, constant=True, order=10), name="char")
    glob = book(entry(1, constant=True, order=50), name="glob")
    from engine.prompt.wi_sources import BookSource
    from engine.prompt.worldinfo import sorted_entries

    sources = [BookSource(book=char), BookSource(book=glob, kind="global")]
    assert [b for b, _ in sorted_entries(sources, 1)] == ["char", "glob"]
    assert [b for b, _ in sorted_entries(sources, 2)] == ["glob", "char"]
    assert [b for b, _ in sorted_entries(sources, 0)] == ["glob", "char"]
    twice = [BookSource(book=glob), BookSource(book=glob, kind="global")]
    assert len(sorted_entries(twice, 1)) == 1
    result = scan([char, glob], ["x"])
    assert {e.key for e in result.activated} == {"char.1", "glob.1"}


def test_catastrophic_regex_key_times_out_as_no_match() -> None:
    b = book(entry(1, "/(a+)+$/"), entry(2, "aaa"))
    assert uids(scan(b, ["a" * 40 + "!"])) == {2}
