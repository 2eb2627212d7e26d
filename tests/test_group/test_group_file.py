"""SillyTavern group definitions (groups/<id>.json): parse, settings, lossless round trip."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from engine.errors import FormatError
from engine.formats.st_group import (
    GroupDefinition,
    export_definition,
    group_to_json,
    kept_definition,
    member_name,
    parse_group,
)
from engine.group.settings import MAX_GROUP_MEMBERS

ST_GROUP = {
    "id": "1717171717171",
    "name": "The Tavern",
    "members": ["Mira.png", "Bram.png", "Cole Stone.png"],
    "avatar_url": "",
    "allow_self_responses": True,
    "activation_strategy": 3,
    "generation_mode": 2,
    "disabled_members": ["Bram.png"],
    "chat_metadata": {},
    "fav": False,
    "chat_id": "The Tavern - 2025-01-01@12h00m00s",
    "chats": ["The Tavern - 2025-01-01@12h00m00s", 1690000000000],
    "auto_mode_delay": 5,
    "generation_mode_join_prefix": "<{{char}}'s <FIELDNAME>>",
    "generation_mode_join_suffix": "</{{char}}>",
    "hideMutedSprites": False,
    "past_metadata": {"old": {"note": "kept"}},
    "some_extension_key": [1, {"x": None}],
}


def raw(obj: object) -> bytes:
    return json.dumps(obj).encode("utf-8")


def test_parse_reads_sillytaverns_fields() -> None:
    group = parse_group(raw(ST_GROUP), source="groups/1717171717171.json")
    assert group.members == ("Mira.png", "Bram.png", "Cole Stone.png")
    assert group.disabled_members == ("Bram.png",)
    assert group.strategy == "pooled" and group.mode == "join"
    assert group.join_prefix == "<{{char}}'s <FIELDNAME>>"
    assert group.chats == ("The Tavern - 2025-01-01@12h00m00s", "1690000000000")
    settings = group.settings()
    assert settings.members == ("Mira", "Bram", "Cole Stone")
    assert settings.muted == ("Bram",)
    assert settings.join_muted and settings.allow_self_responses


@pytest.mark.parametrize(
    ("number", "strategy"), [(0, "natural"), (1, "list"), (2, "manual"), (3, "pooled")]
)
def test_strategy_numbers(number: int, strategy: str) -> None:
    group = parse_group(raw({**ST_GROUP, "activation_strategy": number}), source="g.json")
    assert group.strategy == strategy


def test_generation_modes() -> None:
    swap = parse_group(raw({**ST_GROUP, "generation_mode": 0}), source="g.json").settings()
    join = parse_group(raw({**ST_GROUP, "generation_mode": 1}), source="g.json").settings()
    assert (swap.mode, join.mode, join.join_muted) == ("swap", "join", False)


def test_member_names_come_from_cards_or_the_file_name() -> None:
    assert member_name("Mira.png") == "Mira" and member_name("Legacy Name") == "Legacy Name"
    group = parse_group(raw(ST_GROUP), source="g.json")
    settings = group.settings({"Mira.png": "Mira the Bold"})
    assert settings.members == ("Mira the Bold", "Bram", "Cole Stone")


def test_round_trip_keeps_every_field() -> None:
    group = parse_group(raw(ST_GROUP), source="g.json")
    assert group_to_json(group) == ST_GROUP


def test_changed_fields_are_written_back_and_the_rest_kept() -> None:
    group = parse_group(raw(ST_GROUP), source="g.json")
    changed = replace(group, disabled_members=(), activation_strategy=1)
    out = group_to_json(changed)
    assert out["disabled_members"] == [] and out["activation_strategy"] == 1
    assert out["past_metadata"] == {"old": {"note": "kept"}}
    assert out["chats"] == ST_GROUP["chats"]  # unchanged: the old number keeps its spelling


def test_a_new_group_gets_every_field() -> None:
    out = group_to_json(GroupDefinition(name="New", members=("A.png",)))
    assert out["members"] == ["A.png"] and out["generation_mode"] == 0
    assert out["auto_mode_delay"] == 5 and out["hideMutedSprites"] is False


def test_export_keeps_a_former_members_mute_only_while_nothing_changed() -> None:
    # SillyTavern can leave a removed member in disabled_members; an untouched group keeps it.
    stale = {**ST_GROUP, "disabled_members": ["Bram.png", "Gone.png"]}
    definition = parse_group(raw(stale), source="g.json")
    names = {"Cole Stone.png": "Cole"}
    kept = kept_definition(definition, names)
    group = definition.settings(names)
    assert group.members == ("Mira", "Bram", "Cole")
    assert export_definition(group, kept, new_id="1") == stale
    unmuted = export_definition(replace(group, muted=()), kept, new_id="1")
    assert unmuted["disabled_members"] == []
    assert unmuted["members"] == stale["members"]  # Cole keeps the file name it came with


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"members": [1]}, "members[0]"),
        ({"activation_strategy": 7}, "activation_strategy"),
        ({"generation_mode": 9}, "generation_mode"),
        ({"chats": {"a": 1}}, "chats"),
        ({"allow_self_responses": "yes"}, "allow_self_responses"),
    ],
)
def test_bad_fields_name_the_field(patch: dict[str, object], field: str) -> None:
    with pytest.raises(FormatError) as caught:
        parse_group(raw({**ST_GROUP, **patch}), source="g.json")
    assert caught.value.field == field and str(caught.value).startswith("g.json: ")


def test_malformed_files_are_one_clear_line() -> None:
    with pytest.raises(FormatError, match="expected a group object, got an array"):
        parse_group(b"[]", source="g.json")
    with pytest.raises(FormatError, match="lone surrogate"):
        parse_group(b'{"name": "\\ud800", "members": []}', source="g.json")
    too_many = [f"C{i}.png" for i in range(MAX_GROUP_MEMBERS + 1)]
    with pytest.raises(FormatError, match="MAX_GROUP_MEMBERS"):
        parse_group(raw({**ST_GROUP, "members": too_many}), source="g.json")
