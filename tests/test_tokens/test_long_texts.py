"""Issue 12: counting a text of any length works and never raises.

The shipped tokenizer refuses a text of a million characters or one giving 200k tokens; a
giant chat message used to make every later turn fail there. Texts up to EXACT_COUNT_MAX_CHARS
are counted in one call, longer ones in pieces, and past CHUNKED_COUNT_MAX_CHARS the rest is
estimated at the rate of the counted part.
"""

from __future__ import annotations

import math

import pytest

from engine.prompt import tokens
from engine.prompt.tokens import (
    CHUNKED_COUNT_MAX_CHARS,
    ESTIMATE_MARGIN,
    EXACT_COUNT_MAX_CHARS,
    ExactCounter,
    _encoding,
    counter_for_model,
)

SENTENCE = "The quick brown fox, über-tired, jumps over 13 lazy dogs.\n"


def _exact(text: str) -> int:
    """The tokenizer's own count (only for texts it accepts)."""
    return len(_encoding(tokens.O200K).encode_ordinary(text))


def test_up_to_the_limit_a_text_is_counted_in_one_call() -> None:
    text = (SENTENCE * (EXACT_COUNT_MAX_CHARS // len(SENTENCE) + 1))[:EXACT_COUNT_MAX_CHARS]
    assert counter_for_model("gpt-4o").count(text) == _exact(text)


def test_past_the_limit_pieces_add_up_to_the_exact_count() -> None:
    text = SENTENCE * (3 * EXACT_COUNT_MAX_CHARS // len(SENTENCE))
    assert len(text) > 2 * EXACT_COUNT_MAX_CHARS
    counted = counter_for_model("gpt-4o").count(text)
    cuts = math.ceil(len(text) / EXACT_COUNT_MAX_CHARS)
    assert abs(counted - _exact(text)) <= cuts  # about a token per cut at most
    assert counter_for_model("claude-3").count(text) == math.ceil(counted * (1 + ESTIMATE_MARGIN))


@pytest.mark.parametrize(
    "text",
    [
        "a" * 2_000_000,  # no space to cut at
        SENTENCE * (2_000_000 // len(SENTENCE) + 1),
        "\U0001f600" * 1_000_001,  # four UTF-8 bytes a character
    ],
    ids=["letters", "sentences", "emoji"],
)
def test_counting_two_million_characters_works(text: str) -> None:
    for model in ("gpt-4o", "gpt-4", "some-local-model"):
        assert counter_for_model(model).count(text) > len(text) // 10


def test_past_the_chunked_size_the_rest_is_estimated() -> None:
    counter = counter_for_model("gpt-4o")
    head = SENTENCE * (CHUNKED_COUNT_MAX_CHARS // len(SENTENCE))
    text = head * 3  # counted up to CHUNKED_COUNT_MAX_CHARS, estimated past it
    assert len(text) > CHUNKED_COUNT_MAX_CHARS
    expected = 3 * counter.count(head)
    assert abs(counter.count(text) - expected) <= expected // 1000


def test_a_piece_the_tokenizer_refuses_is_bounded_by_its_bytes() -> None:
    class Refusing:
        def encode_ordinary(self, text: str) -> list[int]:
            raise ValueError("Input too long to encode safely")

    counter = ExactCounter(tokens.O200K)
    counter._encoding = Refusing()
    assert counter.count("héllo") == len("héllo".encode())
    assert counter.count("x" * (EXACT_COUNT_MAX_CHARS + 5)) == EXACT_COUNT_MAX_CHARS + 5
