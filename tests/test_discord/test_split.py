"""Splitting long replies at 2000 characters without breaking markdown."""

from __future__ import annotations

import re

import pytest

from adapters.discord.split import MESSAGE_LIMIT, scan, split_message


def _balanced(piece: str) -> bool:
    return scan(piece)[-1].balanced


def test_short_text_is_one_piece() -> None:
    assert split_message("hello") == ["hello"]
    assert split_message("") == [""]


def test_limit_is_named_and_every_piece_fits() -> None:
    assert MESSAGE_LIMIT == 2000
    text = "word " * 1500
    pieces = split_message(text)
    assert all(len(p) <= MESSAGE_LIMIT for p in pieces)
    assert " ".join(p.strip() for p in pieces).split() == text.split()


def test_prefers_paragraph_then_line_then_sentence_then_word() -> None:
    para = "a" * 900 + ".\n\n" + "b" * 900 + ". " + "c" * 500
    assert split_message(para)[0] == "a" * 900 + "."
    line = "a" * 900 + ".\n" + "b" * 900 + ". " + "c" * 500
    assert split_message(line)[0] == "a" * 900 + "."
    sentence = "a" * 900 + ". " + "b" * 900 + " c" + "d" * 500
    assert split_message(sentence)[0] == "a" * 900 + "."
    words = "x" * 1500 + " " + "y" * 1000
    assert split_message(words) == ["x" * 1500, "y" * 1000]


def test_sentence_boundary_beats_word_boundary() -> None:
    text = "First sentence is here. " + "word " * 500
    pieces = split_message(text, limit=300)
    assert pieces[0].endswith(("here.", "word"))
    text = ("This is one sentence of moderate length. " * 10) + "x" * 100
    assert split_message(text, limit=300)[0].endswith(".")


def test_a_word_longer_than_a_message_is_cut_hard() -> None:
    pieces = split_message("z" * 4500)
    assert [len(p) for p in pieces] == [1976, 1976, 548]
    assert "".join(pieces) == "z" * 4500


def test_code_fence_is_closed_and_reopened_with_its_language() -> None:
    code = "```python\n" + "".join(f"value_{i} = {i}\n" for i in range(300)) + "```\nDone."
    pieces = split_message(code)
    assert len(pieces) >= 2
    assert all(p.count("```") % 2 == 0 for p in pieces), "every piece has whole fences"
    assert pieces[0].startswith("```python\n") and pieces[0].endswith("\n```")
    assert pieces[1].startswith("```python\n")
    lines = [ln for p in pieces for ln in p.splitlines() if ln.startswith("value_")]
    assert lines == [f"value_{i} = {i}" for i in range(300)]
    assert all(_balanced(p) for p in pieces)


def test_bold_span_is_not_broken() -> None:
    text = "Intro. **" + "very bold words " * 200 + "** outro."
    pieces = split_message(text)
    assert len(pieces) >= 2
    assert all(_balanced(p) for p in pieces)
    assert pieces[0].endswith("bold**") or pieces[0].endswith("words**")
    assert pieces[1].startswith("**") and not pieces[1].startswith("** ")


def test_balanced_boundary_is_preferred_over_cutting_a_span() -> None:
    text = "Plain words here. " * 60 + "*whispered " + "softly " * 200 + "done*"
    pieces = split_message(text)
    assert pieces[0].endswith("here.")
    assert all(_balanced(p) for p in pieces)


@pytest.mark.parametrize("marker", ["**", "*", "__", "~~", "||", "`"])
def test_each_inline_marker_survives(marker: str) -> None:
    text = f"{marker}" + "spoken words " * 300 + f"{marker}"
    pieces = split_message(text)
    assert len(pieces) == 2
    assert all(_balanced(p) for p in pieces)
    body = " ".join(p.replace(marker, "") for p in pieces)
    assert re.sub(r"\s+", " ", body).strip() == ("spoken words " * 300).strip()


def test_snake_case_underscores_are_not_markup() -> None:
    text = "see some_long_name here. " * 200
    assert all(_balanced(p) for p in split_message(text))
    assert "".join(split_message(text)).count("__") == 0


def test_too_small_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="too small"):
        split_message("x" * 100, limit=40)
