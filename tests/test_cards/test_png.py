"""PNG chunk reading and writing, and its named limits."""

from __future__ import annotations

import struct

import pytest

from engine.errors import FormatError
from engine.formats import png
from engine.formats.png import (
    PngChunk,
    blank_png,
    make_text_chunk,
    read_chunks,
    read_text_chunks,
    replace_text_chunks,
    write_chunks,
)


def test_blank_png_is_well_formed() -> None:
    chunks = read_chunks(blank_png(), source="t")
    assert [c.type for c in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    assert struct.unpack(">II", chunks[0].data[:8]) == (1, 1)


def test_text_chunks_are_case_insensitive_and_first_wins() -> None:
    base = read_chunks(blank_png(), source="t")
    extra = [make_text_chunk("Chara", "one"), make_text_chunk("chara", "two")]
    data = write_chunks([*base[:-1], *extra, base[-1]])
    assert read_text_chunks(data, source="t") == {"chara": "one"}
    replaced = replace_text_chunks(data, [("ccv3", "x")], drop_keywords=["CHARA"], source="t")
    assert read_text_chunks(replaced, source="t") == {"ccv3": "x"}


def test_chunk_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    big = write_chunks(
        [PngChunk(type=b"tEXt", data=b"a\x00" + b"b" * 100), PngChunk(type=b"IEND", data=b"")]
    )
    assert len(read_chunks(big, source="t")) == 2
    monkeypatch.setattr(png, "MAX_CHUNK_BYTES", 50)
    with pytest.raises(FormatError, match="MAX_CHUNK_BYTES"):
        read_chunks(big, source="big.png")


def test_chunk_count_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    many = write_chunks(
        [PngChunk(type=b"tEXt", data=b"k\x00v")] * 5 + [PngChunk(type=b"IEND", data=b"")]
    )
    assert len(read_chunks(many, source="t")) == 6
    monkeypatch.setattr(png, "MAX_CHUNKS", 3)
    with pytest.raises(FormatError, match="MAX_CHUNKS"):
        read_chunks(many, source="many.png")


def test_truncated_and_foreign_files() -> None:
    with pytest.raises(FormatError, match="signature"):
        read_chunks(b"GIF89a", source="x.gif")
    with pytest.raises(FormatError, match="truncated"):
        read_chunks(blank_png()[:-6], source="cut.png")
