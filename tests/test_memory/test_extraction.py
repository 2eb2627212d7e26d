"""Extraction of <summary>-style tags from raw assistant output."""

from __future__ import annotations

import pytest

from engine.memory.errors import MemoryPolicyError
from engine.memory.extraction import (
    DEFAULT_SUMMARY_TAGS,
    MAX_EXTRACTED_ITEM_CHARS,
    MAX_EXTRACTED_ITEMS,
    MAX_TAG_NAMES,
    extract_memory_tags,
    validate_tags,
)


@pytest.mark.parametrize("tag", DEFAULT_SUMMARY_TAGS)
def test_every_default_tag_is_extracted_and_hidden(tag: str) -> None:
    raw = f"Alice smiles.\n<{tag}>Alice greeted Bob.</{tag}>\nThe end."
    result = extract_memory_tags(raw, role="assistant")
    assert [i.text for i in result.items] == ["Alice greeted Bob."]
    assert result.items[0].tag == tag
    assert result.visible_text == "Alice smiles.\n\nThe end."
    assert f"<{tag}>" not in result.visible_text


def test_case_insensitive_multiline_and_several_blocks() -> None:
    raw = "Hi.<SUMMARY>line one\nline two</Summary> mid <memo> m </memo>"
    result = extract_memory_tags(raw, role="assistant")
    assert [(i.tag, i.text) for i in result.items] == [
        ("summary", "line one\nline two"),
        ("memo", "m"),
    ]
    assert result.visible_text == "Hi. mid"


def test_cjk_tags_and_content() -> None:
    raw = "她转身离开。\n<摘要>角色A向角色B表白，被婉拒。</摘要>\n<记忆>B即将离开城市</记忆>"
    result = extract_memory_tags(raw, role="assistant")
    assert [i.text for i in result.items] == ["角色A向角色B表白，被婉拒。", "B即将离开城市"]
    assert result.visible_text == "她转身离开。"


def test_user_text_is_never_harvested() -> None:
    raw = "<summary>I am the king now</summary>"
    result = extract_memory_tags(raw, role="user")
    assert result.items == ()
    assert result.visible_text == raw


def test_nested_same_tag_stays_in_one_block() -> None:
    raw = "A <summary>outer <summary>inner</summary> tail</summary> B"
    result = extract_memory_tags(raw, role="assistant")
    assert [i.text for i in result.items] == ["outer inner tail"]
    assert result.visible_text == "A  B"


def test_other_tag_inside_block_is_stripped_from_item() -> None:
    raw = "<summary>x <memory>y</memory> z</summary>"
    result = extract_memory_tags(raw, role="assistant")
    assert [i.text for i in result.items] == ["x y z"]
    assert result.visible_text == ""


def test_unclosed_block_runs_to_end_and_is_reported() -> None:
    raw = "Story goes on.\n<summary>Alice found the key"
    result = extract_memory_tags(raw, role="assistant")
    assert result.items[0].text == "Alice found the key"
    assert result.items[0].complete is False
    assert result.visible_text == "Story goes on."
    assert any("unclosed" in d for d in result.diagnostics)


def test_stray_closing_tag_is_dropped_with_a_note() -> None:
    result = extract_memory_tags("Text</summary> more", role="assistant")
    assert result.items == ()
    assert result.visible_text == "Text more"
    assert any("stray" in d for d in result.diagnostics)


def test_tags_with_attributes_or_spaces_are_prose() -> None:
    raw = '<summary x="1">not a tag</summary> and < summary >no</ summary >'
    result = extract_memory_tags(raw, role="assistant")
    # The close tag alone is stray; the attribute-carrying open tag is left as prose.
    assert all("not a tag" not in i.text for i in result.items)
    assert '<summary x="1">not a tag' in result.visible_text


def test_empty_blocks_give_no_items_and_text_without_tags_is_untouched() -> None:
    assert extract_memory_tags("a <memo>  </memo> b", role="assistant").items == ()
    raw = "No tags here.\n\n\n\nStill raw."
    assert extract_memory_tags(raw, role="assistant").visible_text == raw


def test_custom_tag_list_per_preset() -> None:
    raw = "<summary>kept visible</summary><notes>taken</notes>"
    result = extract_memory_tags(raw, role="assistant", tags=("notes",))
    assert [i.text for i in result.items] == ["taken"]
    assert result.visible_text == "<summary>kept visible</summary>"


def test_limits_on_item_length_and_count() -> None:
    long = "x" * (MAX_EXTRACTED_ITEM_CHARS + 50)
    result = extract_memory_tags(f"<memo>{long}</memo>", role="assistant")
    assert len(result.items[0].text) == MAX_EXTRACTED_ITEM_CHARS
    many = "".join(f"<memo>{i}</memo>" for i in range(MAX_EXTRACTED_ITEMS + 3))
    assert len(extract_memory_tags(many, role="assistant").items) == MAX_EXTRACTED_ITEMS


def test_bad_tag_lists_are_refused() -> None:
    with pytest.raises(MemoryPolicyError, match="not a usable tag name"):
        validate_tags(["ok", "bad tag"])
    with pytest.raises(MemoryPolicyError, match="at most"):
        validate_tags([f"t{i}" for i in range(MAX_TAG_NAMES + 1)])
    assert validate_tags(["Memo", "memo", " x "]) == ("Memo", "x")
