"""Character cards: fixture import, JSON/PNG round trips, unknown fields, malformed input."""

from __future__ import annotations

import base64
import json
from dataclasses import fields, replace

import pytest

from engine.errors import FormatError
from engine.formats.cards import (
    MAX_CARD_BYTES,
    CharacterCard,
    DepthPrompt,
    card_to_json,
    card_to_json_bytes,
    card_to_png,
    parse_card,
)
from engine.formats.png import (
    blank_png,
    make_text_chunk,
    read_chunks,
    read_text_chunks,
    write_chunks,
)
from tests.conftest import ST_FIXTURES

DATA = ST_FIXTURES
SERAPHINA = DATA / "card_v2v3_Seraphina.png"


def _same_except(a: CharacterCard, b: CharacterCard, *skip: str) -> list[str]:
    return [
        f.name
        for f in fields(a)
        if f.name not in skip and getattr(a, f.name) != getattr(b, f.name)
    ]


def _png_with(**chunks: object) -> bytes:
    base = read_chunks(blank_png(), source="t")
    extra = [
        make_text_chunk(k, base64.b64encode(json.dumps(v).encode()).decode())
        for k, v in chunks.items()
    ]
    return write_chunks([*base[:-1], *extra, base[-1]])


def test_seraphina_png_imports() -> None:
    card = parse_card(SERAPHINA.read_bytes(), source=SERAPHINA.name)
    assert card.name == "Seraphina"
    assert card.spec == "chara_card_v3"  # ccv3 chunk preferred
    assert card.first_mes.startswith("*")
    assert card.character_book is not None
    entries = card.character_book["entries"]
    assert isinstance(entries, list) and len(entries) == 4
    assert card.extensions["world"] == "Eldoria"
    assert card.talkativeness == 0.5  # stored as the string "0.5"
    assert card.depth_prompt is None  # present but empty
    assert card.avatar is not None
    assert set(read_text_chunks(card.avatar, source="t")) == set()  # card chunks stripped


def test_png_round_trip_is_lossless() -> None:
    card = parse_card(SERAPHINA.read_bytes(), source=SERAPHINA.name)
    again = parse_card(card_to_png(card), source="export.png")
    assert _same_except(card, again) == []
    chunks = [c.type for c in read_chunks(card_to_png(card), source="t")]
    assert chunks[-3:] == [b"tEXt", b"tEXt", b"IEND"]


def test_export_writes_both_chunks_with_ccv3_relabelled() -> None:
    card = parse_card(SERAPHINA.read_bytes(), source=SERAPHINA.name)
    texts = read_text_chunks(card_to_png(card), source="t")
    chara = json.loads(base64.b64decode(texts["chara"]))
    ccv3 = json.loads(base64.b64decode(texts["ccv3"]))
    assert (chara["spec"], chara["spec_version"]) == ("chara_card_v2", "2.0")
    assert (ccv3["spec"], ccv3["spec_version"]) == ("chara_card_v3", "3.0")
    assert chara["data"] == ccv3["data"]


def test_json_round_trip_keeps_unknown_fields() -> None:
    src = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "mystery_top": {"x": [1, 2]},
        "data": {
            "name": "Ann",
            "description": "d",
            "first_mes": "hi",
            "alternate_greetings": ["a", "b"],
            "tags": ["t1"],
            "extensions": {
                "depth_prompt": {"prompt": "note", "depth": 2, "role": "user"},
                "vendor": {"deep": {"k": True}},
            },
            "character_book": {"entries": [], "extensions": {"z": 1}, "odd": "kept"},
            "mystery_data": 7,
        },
    }
    card = parse_card(json.dumps(src).encode(), source="ann.json")
    assert card.depth_prompt == DepthPrompt(text="note", depth=2, role="user")
    assert card.alternate_greetings == ("a", "b")
    exported = card_to_json(card)
    assert exported["mystery_top"] == {"x": [1, 2]}
    data = exported["data"]
    assert isinstance(data, dict)
    assert data["mystery_data"] == 7
    assert data["extensions"]["vendor"] == {"deep": {"k": True}}
    assert data["character_book"]["odd"] == "kept"
    again = parse_card(card_to_json_bytes(card), source="again.json")
    assert _same_except(card, again, "raw") == []
    assert card_to_json(again) == exported  # export is a fixed point


def test_v3_json_stays_v3_and_keeps_v3_fields() -> None:
    src = {
        "spec": "chara_card_v3",
        "spec_version": "3.0",
        "data": {
            "name": "V",
            "nickname": "vee",
            "assets": [{"type": "icon", "uri": "ccdefault:"}],
            "group_only_greetings": ["g"],
        },
    }
    card = parse_card(json.dumps(src).encode(), source="v.json")
    assert card.spec == "chara_card_v3" and card.group_only_greetings == ("g",)
    out = card_to_json(card)
    assert out["spec"] == "chara_card_v3"
    assert out["data"]["nickname"] == "vee"  # type: ignore[index]


def test_v2_wins_over_stale_v1_mirror() -> None:
    src = {
        "name": "Old",
        "description": "old",
        "spec": "chara_card_v2",
        "data": {"name": "New", "description": "new"},
    }
    card = parse_card(json.dumps(src).encode(), source="m.json")
    assert (card.name, card.description) == ("New", "new")
    assert card_to_json(card)["name"] == "New"


def test_v1_and_pygmalion_cards() -> None:
    v1 = {
        "name": "One",
        "description": "d",
        "personality": "p",
        "scenario": "s",
        "first_mes": "f",
        "mes_example": "m",
        "creatorcomment": "Creator's notes go here.",
        "tags": "a, b ,c",
    }
    card = parse_card(json.dumps(v1).encode(), source="one.json")
    assert (
        card.spec == "chara_card_v1" and card.creator_notes == "" and card.tags == ("a", "b", "c")
    )
    upgraded = card_to_json(card)
    assert upgraded["spec"] == "chara_card_v2"
    assert parse_card(json.dumps(upgraded).encode(), source="x").name == "One"
    pyg = {
        "char_name": "P",
        "char_persona": "persona",
        "char_greeting": "hey",
        "world_scenario": "w",
        "example_dialogue": "ex",
    }
    card = parse_card(json.dumps(pyg).encode(), source="p.json")
    assert (card.name, card.description, card.first_mes, card.scenario, card.mes_example) == (
        "P",
        "persona",
        "hey",
        "w",
        "ex",
    )


def test_chara_only_png_and_damaged_ccv3_falls_back() -> None:
    v2 = {"spec": "chara_card_v2", "data": {"name": "C"}}
    assert parse_card(_png_with(chara=v2), source="c.png").name == "C"
    base = read_chunks(_png_with(chara=v2), source="t")
    bad = make_text_chunk("ccv3", "!!!not base64!!!")
    png = write_chunks([*base[:-1], bad, base[-1]])
    assert parse_card(png, source="c.png").spec == "chara_card_v2"


def test_export_to_given_image_replaces_old_card_chunks() -> None:
    card = parse_card(json.dumps({"name": "A"}).encode(), source="a.json")
    old = _png_with(chara={"name": "stale"}, ccv3={"name": "stale"})
    out = card_to_png(card, image=old)
    assert parse_card(out, source="o.png").name == "A"
    assert [c.type for c in read_chunks(out, source="t")].count(b"tEXt") == 2


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (b"\x89PNG\r\n\x1a\n", "png"),
        (blank_png(), "png"),
        (b"{", ""),
        (b"[]", ""),
        (b"\xff\xfe", ""),
        (b'{"foo": 1}', "name"),
        (b'{"name": 5.5e400}', ""),
        (b'{"name": ["x"]}', "name"),
        (
            b'{"spec": "chara_card_v2", "data": {"name": "x", "alternate_greetings": [1]}}',
            "data.alternate_greetings[0]",
        ),
        (b'{"spec": "chara_card_v2", "data": {"name": "x", "extensions": []}}', "data.extensions"),
        (
            b'{"spec": "chara_card_v2", "data": {"name": "x", "character_book": "no"}}',
            "data.character_book",
        ),
        (b'{"spec": "chara_card_v2", "data": 3}', "data"),
    ],
)
def test_malformed_cards_raise_format_error_naming_field(data: bytes, field: str) -> None:
    with pytest.raises(FormatError) as info:
        parse_card(data, source="bad.card")
    assert info.value.source == "bad.card"
    assert info.value.field == field
    assert "bad.card" in str(info.value)


def test_card_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.formats.cards as cards

    monkeypatch.setattr(cards, "MAX_CARD_BYTES", 10)
    with pytest.raises(FormatError, match="MAX_CARD_BYTES"):
        parse_card(b'{"name": "abcdefgh"}', source="big.json")
    assert MAX_CARD_BYTES >= 16 * 1024 * 1024  # real avatars are several MB


def test_replace_keeps_card_immutable() -> None:
    card = parse_card(json.dumps({"name": "A"}).encode(), source="a.json")
    edited = replace(card, description="new")
    assert parse_card(card_to_json_bytes(edited), source="e").description == "new"


def test_engine_made_card_exports_to_png_and_back() -> None:
    card = CharacterCard(
        name="Nova",
        description="A pilot.",
        alternate_greetings=("Hey.",),
        depth_prompt=DepthPrompt(text="Stay in character.", depth=2, role="system"),
        talkativeness=0.8,
    )
    again = parse_card(card_to_png(card), source="nova.png")
    assert _same_except(card, again, "raw", "avatar", "spec", "extensions") == []
    assert again.extensions["talkativeness"] == 0.8
    assert again.avatar is not None and again.avatar.startswith(b"\x89PNG")


def test_export_refuses_a_non_png_image() -> None:
    card = CharacterCard(name="J")
    with pytest.raises(FormatError, match="not a PNG"):
        card_to_png(card, image=b"\xff\xd8\xff\xe0 jpeg bytes")
