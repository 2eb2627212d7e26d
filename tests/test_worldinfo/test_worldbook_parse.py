"""World books: the world file, card books and lorebook_v3 import; exports round-trip."""

from __future__ import annotations

import copy
import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import FormatError
from engine.formats.worldbook import (
    MAX_ENTRIES,
    POS_AFTER,
    POS_AT_DEPTH,
    POS_BEFORE,
    WorldBook,
    character_book_to_worldbook,
    parse_worldbook,
    worldbook_to_character_book,
    worldbook_to_json,
)
from tests.conftest import ST_FIXTURES

DATA = ST_FIXTURES


@pytest.fixture
def eldoria() -> dict[str, object]:
    return json.loads((DATA / "worldinfo_Eldoria.json").read_text(encoding="utf-8"))


def test_eldoria_imports_every_entry(eldoria: dict[str, object]) -> None:
    book = parse_worldbook(eldoria, source="Eldoria.json", name="Eldoria")
    assert book.name == "Eldoria" and [e.uid for e in book.entries] == [0, 1, 2, 3]
    first = book.entries[0]
    assert first.keys == ("eldoria", "wood", "forest", "magical forest")
    assert first.selective and first.order == 100 and first.position == POS_BEFORE
    assert first.role is None and first.case_sensitive is None and first.sticky == 0


def test_eldoria_round_trips(eldoria: dict[str, object]) -> None:
    book = parse_worldbook(eldoria, source="Eldoria.json")
    assert worldbook_to_json(book) == eldoria


def test_changed_entry_is_written_back(eldoria: dict[str, object]) -> None:
    book = parse_worldbook(eldoria, source="Eldoria.json")
    entry = replace(book.entries[1], position=POS_AT_DEPTH, depth=2, role=1)
    out = worldbook_to_json(replace(book, entries=(book.entries[0], entry)))
    assert out["entries"]["1"]["position"] == 4 and out["entries"]["1"]["role"] == 1
    assert out["entries"]["1"]["content"] == eldoria["entries"]["1"]["content"]


def test_card_book_converts_like_sillytavern() -> None:
    card_book = {
        "name": "Lore",
        "scan_depth": 3,
        "entries": [
            {
                "keys": ["a"],
                "secondary_keys": ["b"],
                "content": "A",
                "enabled": False,
                "insertion_order": 7,
                "position": "after_char",
                "selective": True,
                "extensions": {"selectiveLogic": 3, "probability": 40, "sticky": 2, "x": 1},
            },
            {
                "id": 9,
                "keys": ["c"],
                "content": "C",
                "position": "before_char",
                "extensions": {"position": 4, "depth": 1, "role": 2},
            },
        ],
    }
    book = character_book_to_worldbook(card_book, source="card.png")
    a, c = book.entries
    assert (a.uid, a.disable, a.order, a.position, a.selective_logic) == (0, True, 7, POS_AFTER, 3)
    assert (a.probability, a.sticky, a.extensions["x"]) == (40, 2, 1)
    assert (c.uid, c.position, c.depth, c.role) == (9, POS_AT_DEPTH, 1, 2)
    assert book.scan_depth == 3 and book.name == "Lore"
    again = character_book_to_worldbook(worldbook_to_character_book(book), source="x")
    assert again.entries == book.entries


def test_lorebook_v3_and_world_form_of_card_book() -> None:
    data = {"spec": "lorebook_v3", "data": {"name": "L", "entries": [{"keys": ["k"]}]}}
    book = parse_worldbook(data, source="l.json")
    assert book.name == "L" and book.entries[0].keys == ("k",)
    world = worldbook_to_json(book)
    assert world["originalData"]["name"] == "L" and world["entries"]["0"]["key"] == ["k"]
    assert parse_worldbook(world, source="w.json").entries == book.entries


def test_delay_until_recursion_true_is_level_one() -> None:
    book = parse_worldbook(
        {
            "entries": {
                "0": {"uid": 0, "delayUntilRecursion": True},
                "1": {"uid": 1, "delayUntilRecursion": 3},
            }
        },
        source="x",
    )
    assert [e.delay_until_recursion for e in book.entries] == [1, 3]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"nothing": 1}, "entries"),
        ({"entries": "x"}, "entries"),
        ({"entries": {"0": []}}, "entries.0"),
        ({"entries": {"0": {"key": 5}}}, "entries.0.key"),
        ({"entries": {"0": {"position": 9}}}, "entries.0.position"),
        ({"entries": {"0": {"selectiveLogic": 4}}}, "entries.0.selectiveLogic"),
        ({"entries": {"0": {"role": 5}}}, "entries.0.role"),
        ({"entries": {"0": {"probability": "many"}}}, "entries.0.probability"),
        ({"entries": [{"keys": ["a"], "extensions": {"position": 12}}]}, "extensions.position"),
    ],
)
def test_malformed_books_name_the_field(data: dict[str, object], field: str) -> None:
    with pytest.raises(FormatError) as info:
        parse_worldbook(data, source="bad.json")
    assert "bad.json" in str(info.value) and field in str(info.value)


def test_too_many_entries_is_refused() -> None:
    entries = {str(i): {"uid": i} for i in range(MAX_ENTRIES + 1)}
    with pytest.raises(FormatError, match="MAX_ENTRIES"):
        parse_worldbook({"entries": entries}, source="big.json")


_scalar = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6)
_value = st.recursive(
    _scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)
_entry_keys = st.sampled_from(
    [
        "uid",
        "key",
        "keysecondary",
        "content",
        "order",
        "position",
        "role",
        "depth",
        "probability",
        "selectiveLogic",
        "characterFilter",
        "delayUntilRecursion",
        "sticky",
        "keys",
        "insertion_order",
        "extensions",
        "enabled",
        "id",
    ]
)
_entry = st.dictionaries(_entry_keys, _value, max_size=6) | _value


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.fixed_dictionaries(
            {"entries": st.dictionaries(st.text(max_size=3), _entry, max_size=3)}
        ),
        st.fixed_dictionaries({"entries": st.lists(_entry, max_size=3)}),
        st.fixed_dictionaries({"spec": st.just("lorebook_v3"), "data": _value}),
        _value,
    )
)
def test_fuzz_parse_worldbook_only_raises_format_error(data: object) -> None:
    try:
        book = parse_worldbook(data, source="fuzz.json")
    except FormatError:
        return
    assert isinstance(book, WorldBook)
    json.dumps(worldbook_to_json(book), default=str)
    copy.deepcopy(worldbook_to_character_book(book))


def test_card_embedded_book_and_attached_book_activate_together() -> None:
    from engine.formats.cards import parse_card
    from engine.prompt.wi_sources import BookSource, ListWindow
    from engine.prompt.worldinfo import WorldInfoRequest, scan_world_info

    card = parse_card((DATA / "card_v2v3_Seraphina.png").read_bytes(), source="Seraphina.png")
    assert card.character_book is not None
    embedded = character_book_to_worldbook(card.character_book, source="Seraphina.png")
    assert len(embedded.entries) == 4 and all(e.keys for e in embedded.entries)
    eldoria = json.loads((DATA / "worldinfo_Eldoria.json").read_text(encoding="utf-8"))
    attached = parse_worldbook(eldoria, source="Eldoria.json", name="Eldoria")
    request = WorldInfoRequest(
        books=[BookSource(book=embedded), BookSource(book=attached, kind="chat")],
        window=ListWindow(["Ann: what are the shadowfang beasts?"]),
    )
    result = scan_world_info(request)
    books = {e.book for e in result.activated}
    assert books == {embedded.name, "Eldoria"}
