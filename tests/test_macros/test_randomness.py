"""The string hash, the seeded generator behind {{pick}}, dice and seeded {{random}}."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.macros.randomness import SeedRandom, parse_dice, pick_index, string_hash
from tests.test_macros.util import ctx, text

# cyrb53 values computed with Node from SillyTavern's getStringHash algorithm.
HASHES = [
    ("", 3338908027751811),
    ("a", 7929297801672961),
    ("chat-1", 7235048233963410),
    ("Hello {{user}}", 7297837399355657),
    ("héllo wörld", 6390378405986613),
    ("emoji 😀 here", 3058523121499210),
    ("日本語のテキスト", 700393957254925),
]


@pytest.mark.parametrize(("source", "expected"), HASHES)
def test_string_hash_matches_sillytavern(source: str, expected: int) -> None:
    assert string_hash(source) == expected


def test_seedrandom_is_deterministic_and_in_range() -> None:
    first = SeedRandom("12345")
    second = SeedRandom("12345")
    values = [first.random() for _ in range(50)]
    assert values == [second.random() for _ in range(50)]
    assert all(0 <= v < 1 for v in values)
    assert SeedRandom("12346").random() != values[0]


def test_pick_is_stable_per_chat_content_and_position() -> None:
    template = "{{pick::a::b::c::d}} {{pick::a::b::c::d}} {{pick:1,2,3}}"
    # The SillyTavern oracle picked "d b 3" for chat id chat-1.
    assert text(template, ctx(chat_id="chat-1")) == "d b 3"
    assert text(template, ctx(chat_id="chat-1")) == "d b 3"
    other = {text(template, ctx(chat_id=f"chat-{n}")) for n in range(2, 12)}
    assert len(other) > 1


def test_pick_reroll_seed_changes_the_seed() -> None:
    template = "{{pick::" + "::".join(str(n) for n in range(50)) + "}}"
    plain = text(template, ctx(chat_id="c"))
    rerolled = {
        text(template, ctx(chat_id="c", chat_metadata={"pick_reroll_seed": n})) for n in range(5)
    }
    assert rerolled - {plain}


def test_pick_index_in_range() -> None:
    assert all(0 <= pick_index(f"seed-{n}", 3) < 3 for n in range(100))


@pytest.mark.parametrize(
    ("formula", "parsed"),
    [
        ("1d6", (1, 6, 0)),
        ("20", (1, 20, 0)),
        ("2d6+3", (2, 6, 3)),
        ("3D4-1", (3, 4, -1)),
        ("1d0", None),
        ("0", None),
        ("3d6kh2", None),
        ("1d6+2d4", None),
        ("bogus", None),
    ],
)
def test_dice_grammar(formula: str, parsed: tuple[int, int, int] | None) -> None:
    assert parse_dice(formula) == parsed


def test_roll_stays_in_range_and_bad_formula_is_empty() -> None:
    for seed in range(30):
        out = text("{{roll 2d6+3}} {{roll::20}} [{{roll::1d0}}]", ctx(seed=seed))
        match = re.fullmatch(r"(\d+) (\d+) \[\]", out)
        assert match
        assert 5 <= int(match.group(1)) <= 15
        assert 1 <= int(match.group(2)) <= 20


def test_seeded_random_reproduces_and_uses_every_item() -> None:
    outs = [text("{{random::a::b::c}}", ctx(seed=7)) for _ in range(3)]
    assert len(set(outs)) == 1
    seen = {text("{{random::a::b::c}}", ctx(seed=s)) for s in range(60)}
    assert seen == {"a", "b", "c"}


def test_random_list_forms() -> None:
    assert text("{{random::only}}") == "only"
    assert text("{{random a\\,b}}") == "a,b"
    assert text("[{{random}}]") == "[]"
    assert text("{{random:x, y}}") in {"x", "y"}


def _reference_hash(text: str) -> int:
    """cyrb53 one code unit at a time, masking every step (the plain reading of the spec)."""
    units = [ord(c) for c in text.encode("utf-16-le").decode("latin-1")]
    codes = [units[i] | units[i + 1] << 8 for i in range(0, len(units), 2)]
    mask = 0xFFFFFFFF
    h1, h2 = 0xDEADBEEF, 0x41C6CE57
    for ch in codes:
        h1 = ((h1 ^ ch) * 2654435761) & mask
        h2 = ((h2 ^ ch) * 1597334677) & mask
    h1 = (((h1 ^ (h1 >> 16)) * 2246822507) & mask) ^ (((h2 ^ (h2 >> 13)) * 3266489909) & mask)
    h2 = (((h2 ^ (h2 >> 16)) * 2246822507) & mask) ^ (((h1 ^ (h1 >> 13)) * 3266489909) & mask)
    return 4294967296 * (2097151 & h2) + h1


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=100))
def test_unrolled_hash_matches_the_step_by_step_reading(text_: str) -> None:
    assert string_hash(text_) == _reference_hash(text_)
