"""Fuzzing the card importer: whatever the bytes, the only failure is FormatError."""

from __future__ import annotations

import base64
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import FormatError
from engine.formats.cards import card_to_json, card_to_png, parse_card
from engine.formats.png import blank_png, make_text_chunk, read_chunks, write_chunks
from tests.conftest import ST_FIXTURES

SERAPHINA = ST_FIXTURES / "card_v2v3_Seraphina.png"
REAL = SERAPHINA.read_bytes()
# Offsets worth hitting: the signature and IHDR, and the two card chunks at the end.
offsets = st.integers(min_value=0, max_value=64) | st.integers(
    min_value=len(REAL) - 40_500, max_value=len(REAL) - 1
)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
card_keys = st.sampled_from(
    [
        "name",
        "description",
        "first_mes",
        "tags",
        "alternate_greetings",
        "extensions",
        "character_book",
        "depth_prompt",
        "talkativeness",
        "spec",
        "data",
        "char_name",
    ]
)
card_like = st.dictionaries(card_keys, json_values, max_size=6).map(
    lambda d: {**d, "data": d.get("data", {**d})} if "spec" in d else d
)


def _try(data: bytes) -> None:
    try:
        card = parse_card(data, source="fuzz")
    except FormatError as exc:
        assert exc.source == "fuzz"
        return
    # Whatever imported must also export and import again.
    parse_card(json.dumps(card_to_json(card)).encode(), source="again")
    parse_card(card_to_png(card), source="again.png")


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(data: bytes) -> None:
    _try(data)


@FUZZ
@given(st.text(max_size=200))
def test_random_unicode(text: str) -> None:
    _try(text.encode("utf-8", "surrogatepass"))


@FUZZ
@given(card_like)
def test_card_shaped_json(obj: dict[str, object]) -> None:
    _try(json.dumps(obj).encode())


@FUZZ
@given(card_like, st.sampled_from(["chara", "ccv3", "CHARA"]))
def test_card_shaped_png(obj: dict[str, object], keyword: str) -> None:
    base = read_chunks(blank_png(), source="t")
    chunk = make_text_chunk(keyword, base64.b64encode(json.dumps(obj).encode()).decode())
    _try(write_chunks([*base[:-1], chunk, base[-1]]))


@settings(max_examples=60, deadline=None)
@given(offsets, st.binary(min_size=1, max_size=8))
def test_corrupted_real_png(offset: int, junk: bytes) -> None:
    data = bytearray(REAL)
    data[offset : offset + len(junk)] = junk
    _try(bytes(data))


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=len(REAL)))
def test_truncated_real_png(cut: int) -> None:
    _try(REAL[:cut])
