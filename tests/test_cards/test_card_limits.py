"""Issue 12: a card whose text field is over MAX_CARD_FIELD_CHARS is refused at import.

A million-character description would overflow the context of every turn; the import says
which field is too long (cutting it would silently change the card). A card already stored is
read as it is.
"""

from __future__ import annotations

import json

import pytest

from engine.errors import FormatError
from engine.formats.cards import MAX_CARD_FIELD_CHARS, card_from_mapping, card_to_png, parse_card

LIMIT = "x" * MAX_CARD_FIELD_CHARS


def _v2(**data: object) -> dict[str, object]:
    return {"spec": "chara_card_v2", "data": {"name": "Bob", **data}}


@pytest.mark.parametrize(
    ("card", "field"),
    [
        (_v2(description=LIMIT + "x"), "data.description"),
        (
            _v2(first_mes="hi", alternate_greetings=["a", LIMIT + "x"]),
            "data.alternate_greetings[1]",
        ),
        (
            _v2(extensions={"depth_prompt": {"prompt": LIMIT + "x", "depth": 4}}),
            "data.extensions.depth_prompt.prompt",
        ),
        ({"name": "Bob", "scenario": LIMIT + "x"}, "scenario"),
    ],
)
def test_a_field_over_the_limit_is_refused_naming_it(card: dict[str, object], field: str) -> None:
    with pytest.raises(FormatError) as info:
        parse_card(json.dumps(card).encode(), source="bob.json")
    assert info.value.field == field
    assert f"MAX_CARD_FIELD_CHARS={MAX_CARD_FIELD_CHARS}" in str(info.value)


def test_a_field_at_the_limit_imports_from_json_and_png() -> None:
    card = parse_card(json.dumps(_v2(description=LIMIT)).encode(), source="bob.json")
    assert len(card.description) == MAX_CARD_FIELD_CHARS
    assert parse_card(card_to_png(card), source="bob.png").description == LIMIT


def test_a_stored_card_is_read_whatever_its_size() -> None:
    card = card_from_mapping(_v2(description=LIMIT * 2), source="card Bob")
    assert len(card.description) == 2 * MAX_CARD_FIELD_CHARS
