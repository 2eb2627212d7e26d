"""Minimal PNG chunk reading and writing (pure standard library).

Only what character cards need: split a PNG into chunks, read ``tEXt`` chunks, drop some of
them and insert new ones before ``IEND``. Pixel data is never decoded.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.errors import FormatError

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# A chunk longer than this is certainly not in a card file; the PNG spec caps lengths at 2^31-1.
MAX_CHUNK_BYTES = 64 * 1024 * 1024
# Guards against files made of millions of empty chunks.
MAX_CHUNKS = 100_000


@dataclass(frozen=True, slots=True, kw_only=True)
class PngChunk:
    """One chunk: its four-letter type and its data (the CRC is recomputed on write)."""

    type: bytes
    data: bytes


def is_png(data: bytes) -> bool:
    """True when ``data`` starts with the PNG signature."""
    return data.startswith(PNG_SIGNATURE)


def read_chunks(data: bytes, *, source: str) -> list[PngChunk]:
    """Split a PNG file into its chunks, up to and including ``IEND``.

    CRCs are not verified: SillyTavern does not verify them either, and a card whose image
    was damaged by a careless editor should still import.
    """
    if not is_png(data):
        raise FormatError("not a PNG file (bad signature)", source=source, field="png")
    chunks: list[PngChunk] = []
    pos = len(PNG_SIGNATURE)
    while True:
        if len(chunks) >= MAX_CHUNKS:
            raise FormatError(
                f"more than MAX_CHUNKS={MAX_CHUNKS} chunks", source=source, field="png"
            )
        if pos + 8 > len(data):
            raise FormatError("truncated PNG: no IEND chunk", source=source, field="png")
        length, ctype = struct.unpack(">I4s", data[pos : pos + 8])
        if length > MAX_CHUNK_BYTES:
            raise FormatError(
                f"chunk {ctype!r} is {length} bytes, over MAX_CHUNK_BYTES={MAX_CHUNK_BYTES}",
                source=source,
                field="png",
            )
        end = pos + 8 + length + 4
        if end > len(data):
            raise FormatError(f"truncated PNG chunk {ctype!r}", source=source, field="png")
        chunks.append(PngChunk(type=ctype, data=data[pos + 8 : pos + 8 + length]))
        pos = end
        if ctype == b"IEND":
            return chunks


def text_chunk_parts(chunk: PngChunk) -> tuple[str, str] | None:
    """``(keyword, text)`` of a ``tEXt`` chunk (both latin-1), or None for other chunks."""
    if chunk.type != b"tEXt":
        return None
    keyword, sep, text = chunk.data.partition(b"\x00")
    if not sep:
        return None
    return keyword.decode("latin-1"), text.decode("latin-1")


def read_text_chunks(data: bytes, *, source: str) -> dict[str, str]:
    """Map each lower-cased ``tEXt`` keyword to its text; the first chunk of a keyword wins."""
    found: dict[str, str] = {}
    for chunk in read_chunks(data, source=source):
        parts = text_chunk_parts(chunk)
        if parts is not None:
            found.setdefault(parts[0].lower(), parts[1])
    return found


def make_text_chunk(keyword: str, text: str) -> PngChunk:
    """A ``tEXt`` chunk; both parts must be latin-1 (card payloads are base64, so ASCII)."""
    return PngChunk(
        type=b"tEXt", data=keyword.encode("latin-1") + b"\x00" + text.encode("latin-1")
    )


def write_chunks(chunks: Iterable[PngChunk]) -> bytes:
    """Serialise chunks into a PNG file, computing every CRC."""
    out = bytearray(PNG_SIGNATURE)
    for chunk in chunks:
        out += struct.pack(">I", len(chunk.data))
        out += chunk.type
        out += chunk.data
        out += struct.pack(">I", zlib.crc32(chunk.type + chunk.data) & 0xFFFFFFFF)
    return bytes(out)


def replace_text_chunks(
    png: bytes, new: Sequence[tuple[str, str]], *, drop_keywords: Iterable[str], source: str
) -> bytes:
    """Drop ``tEXt`` chunks whose keyword is listed (any case); insert ``new`` before IEND."""
    drop = {k.lower() for k in drop_keywords}
    kept: list[PngChunk] = []
    for chunk in read_chunks(png, source=source):
        parts = text_chunk_parts(chunk)
        if parts is not None and parts[0].lower() in drop:
            continue
        if chunk.type == b"IEND":
            kept.extend(make_text_chunk(k, t) for k, t in new)
        kept.append(chunk)
    return write_chunks(kept)


def strip_text_chunks(png: bytes, keywords: Iterable[str], *, source: str) -> bytes:
    """The same PNG without the ``tEXt`` chunks named in ``keywords``."""
    return replace_text_chunks(png, (), drop_keywords=keywords, source=source)


def blank_png() -> bytes:
    """A valid 1x1 transparent PNG, used when a card is exported without an image."""
    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)  # 1x1, 8-bit RGBA
    pixels = zlib.compress(b"\x00" + b"\x00\x00\x00\x00")  # filter byte + one pixel
    return write_chunks(
        [
            PngChunk(type=b"IHDR", data=header),
            PngChunk(type=b"IDAT", data=pixels),
            PngChunk(type=b"IEND", data=b""),
        ]
    )
