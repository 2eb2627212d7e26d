"""Token counts: exact values from the shipped tables, model families, estimator, overheads."""

from __future__ import annotations

import pytest

from engine.prompt.budget import REPLY_PRIMING_TOKENS, TOKENS_PER_MESSAGE, TOKENS_PER_NAME
from engine.prompt.tokens import (
    CL100K,
    ESTIMATE_MARGIN,
    O200K,
    EstimatingCounter,
    ExactCounter,
    count_chat_tokens,
    counter_for_model,
    encoding_for_model,
)

# Expected counts were computed from the shipped cl100k/o200k tables when this test was
# written; the first and the fourth also match OpenAI's published tiktoken examples.
KNOWN = [
    ("hello world", 2, 2),
    ("", 0, 0),
    ('Seraphina smiled.\n\n*She said*: "Welcome, traveller!"', 14, 14),
    ("antidisestablishmentarianism", 6, 6),
    ("こんにちは世界", 4, 2),
    ("<|endoftext|>", 7, 7),  # special-token text in user content counts as plain text
]


@pytest.mark.parametrize(("text", "cl100k", "o200k"), KNOWN)
def test_exact_counts(text: str, cl100k: int, o200k: int) -> None:
    assert counter_for_model("gpt-4").count(text) == cl100k
    assert counter_for_model("gpt-4o").count(text) == o200k


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("gpt-4o", O200K),
        ("gpt-4o-mini-2024-07-18", O200K),
        ("openai/gpt-4.1", O200K),
        ("chatgpt-4o-latest", O200K),
        ("o1-preview", O200K),
        ("o3-mini", O200K),
        ("o4-mini", O200K),
        ("gpt-5", O200K),
        ("GPT-5-nano", O200K),
        ("ft:gpt-4o-mini:org::abc", O200K),
        ("gpt-4", CL100K),
        ("gpt-4-turbo", CL100K),
        ("gpt-3.5-turbo", CL100K),
        ("gpt-35-turbo", CL100K),
        ("text-embedding-3-small", CL100K),
        ("text-embedding-ada-002", CL100K),
        ("claude-3-5-sonnet", None),
        ("meta-llama/llama-3-70b", None),
        ("", None),
    ],
)
def test_encoding_by_family(model: str, encoding: str | None) -> None:
    assert encoding_for_model(model) == encoding
    counter = counter_for_model(model)
    if encoding is None:
        assert isinstance(counter, EstimatingCounter)
    else:
        assert isinstance(counter, ExactCounter) and counter.name == encoding


def test_estimator_over_counts_by_the_margin() -> None:
    estimate = counter_for_model("mistral-large")
    exact = counter_for_model("gpt-4o")
    text = "The quick brown fox jumps over the lazy dog. " * 20
    assert estimate.count(text) == -(-exact.count(text) * (100 + ESTIMATE_MARGIN * 100) // 100)
    assert estimate.count(text) > exact.count(text)
    assert estimate.count("") == 0
    assert "estimate" in estimate.name


def test_counters_are_cached() -> None:
    assert counter_for_model("gpt-4o") is counter_for_model("gpt-4.1-mini")
    assert counter_for_model("claude") is counter_for_model("llama")


def test_chat_overhead() -> None:
    counter = counter_for_model("gpt-4o")
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "hello world", "name": "Bob"},
    ]
    content = sum(counter.count(v) for m in messages for v in m.values())
    expected = content + 2 * TOKENS_PER_MESSAGE + TOKENS_PER_NAME + REPLY_PRIMING_TOKENS
    assert count_chat_tokens(counter, messages) == expected == 19
    assert (TOKENS_PER_MESSAGE, TOKENS_PER_NAME, REPLY_PRIMING_TOKENS) == (3, 1, 3)
    assert count_chat_tokens(counter, []) == REPLY_PRIMING_TOKENS


def test_counts_are_remembered_within_the_named_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.prompt.tokens as tokens

    monkeypatch.setattr(tokens, "COUNT_MEMO_SIZE", 3)
    monkeypatch.setattr(tokens, "COUNT_MEMO_MAX_CHARS", 20)
    counter = ExactCounter(O200K)
    calls: list[str] = []
    real = counter._encoding

    class Spy:
        def encode_ordinary(self, text: str) -> list[int]:
            calls.append(text)
            return list(real.encode_ordinary(text))

    counter._encoding = Spy()
    texts = ["a b", "c d e", "f", "g h"]
    first = [counter.count(t) for t in texts]
    assert first == [2, 3, 1, 2] and calls == texts
    # "a b" was the least recently used of four texts in a memo of three: counted again;
    # "g h" is still remembered and costs no encoding.
    assert counter.count("g h") == 2 and calls == texts
    assert counter.count("a b") == 2 and calls == [*texts, "a b"]
    long = "word " * 10  # 50 characters: over the memo's text limit, so never remembered
    assert counter.count(long) == counter.count(long) == len(real.encode_ordinary(long))
    assert calls[-2:] == [long, long]


def test_the_count_memo_is_bounded_by_its_total_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import engine.prompt.tokens as tokens

    monkeypatch.setattr(tokens, "COUNT_MEMO_TOTAL_CHARS", 10)
    counter = ExactCounter(O200K)
    for text in ("aaaa", "bbbb", "cccc"):  # 12 characters: the oldest must go
        counter.count(text)
    assert list(counter._memo) == ["bbbb", "cccc"] and counter._chars == 8
