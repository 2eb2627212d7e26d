"""Small PNG pictures and PNG character cards for the tests of card pictures (avatars).

:func:`picture` is a valid 1x1 PNG of one colour, so two characters' pictures differ, with an
optional private ancillary chunk of filler to make it as large as a test needs; :func:`png_card`
embeds a V2 card in it as SillyTavern does (``chara`` and ``ccv3`` text chunks). Importing the
card keeps the picture byte for byte (the card's chunks are the only ones taken out)."""

from __future__ import annotations

import json
import struct
import zlib

from engine.formats.cards import card_to_png, parse_card
from engine.formats.png import PngChunk, write_chunks

FILLER_CHUNK = b"tbFl"
"""A private, ancillary chunk type (lower-case first letter): readers skip it."""


def picture(rgba: tuple[int, int, int, int], *, filler: int = 0) -> bytes:
    """A 1x1 PNG of the colour ``rgba``, ``filler`` bytes larger than the bare image."""
    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)  # 1x1, 8-bit RGBA
    chunks = [
        PngChunk(type=b"IHDR", data=header),
        PngChunk(type=b"IDAT", data=zlib.compress(b"\x00" + bytes(rgba))),
    ]
    if filler:
        chunks.append(PngChunk(type=FILLER_CHUNK, data=b"\x00" * filler))
    chunks.append(PngChunk(type=b"IEND", data=b""))
    return write_chunks(chunks)


def png_card(name: str, description: str, image: bytes, *, talkativeness: float = 0.0) -> bytes:
    """A V2 card named ``name`` (no greeting) inside the PNG ``image``."""
    data = {
        "name": name,
        "description": description,
        "first_mes": "",
        "extensions": {"talkativeness": talkativeness},
    }
    body = {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}
    card = parse_card(json.dumps(body).encode(), source=f"{name}.json")
    return card_to_png(card, image)
