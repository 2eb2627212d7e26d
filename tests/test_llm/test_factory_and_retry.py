"""The provider factory and the retry policy's arithmetic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from adapters.llm import OfflineChatModel, build_chat_model
from adapters.llm.openai_model import OpenAIChatModel
from adapters.llm.retry import (
    BACKOFF_BASE_S,
    BACKOFF_CAP_S,
    JITTER_FRACTION,
    MAX_RETRIES_LIMIT,
    RETRY_AFTER_CAP_S,
    RetryPolicy,
    is_retryable_status,
    parse_retry_after,
)
from engine.errors import ConfigurationError


async def test_factory_builds_each_provider() -> None:
    assert isinstance(build_chat_model("offline", "http://x/v1", None, "m"), OfflineChatModel)
    assert isinstance(build_chat_model("openai", None, None, "m"), OfflineChatModel)
    model = build_chat_model("openai", "http://127.0.0.1:9/v1", "sk-key-123", "m", 30.0, 2)
    assert isinstance(model, OpenAIChatModel)
    assert model.retry.max_retries == 2
    assert model.timeout_s == 30.0
    assert model.name == "openai:m"
    assert "sk-key-123" not in repr(model)
    await model.aclose()


def test_factory_refuses_bad_settings() -> None:
    with pytest.raises(ConfigurationError, match="unknown model provider"):
        build_chat_model("anthropic", "http://x/v1", None, "m")
    with pytest.raises(ConfigurationError, match="max_retries"):
        build_chat_model("openai", "http://x/v1", None, "m", 10.0, MAX_RETRIES_LIMIT + 1)
    with pytest.raises(ConfigurationError, match="timeout_s"):
        build_chat_model("openai", "http://x/v1", None, "m", 0.0, 1)


def test_backoff_doubles_up_to_the_cap() -> None:
    policy = RetryPolicy(max_retries=MAX_RETRIES_LIMIT)
    waits = [policy.delay(n, None, 0.0) for n in range(MAX_RETRIES_LIMIT)]
    assert waits[0] == BACKOFF_BASE_S
    assert waits[1] == BACKOFF_BASE_S * 2
    assert max(w for w in waits if w is not None) == BACKOFF_CAP_S
    assert waits[-1] == BACKOFF_CAP_S
    assert policy.delay(MAX_RETRIES_LIMIT, None, 0.0) is None


def test_jitter_lengthens_but_never_past_the_cap() -> None:
    policy = RetryPolicy(max_retries=MAX_RETRIES_LIMIT)
    first = policy.delay(0, None, 0.999)
    assert first == pytest.approx(BACKOFF_BASE_S * (1 + JITTER_FRACTION * 0.999))
    assert policy.delay(MAX_RETRIES_LIMIT - 1, None, 0.999) == BACKOFF_CAP_S


def test_retry_after_is_honoured_up_to_its_cap() -> None:
    policy = RetryPolicy()
    assert policy.delay(0, 7.0, 0.5) == 7.0
    assert policy.delay(0, RETRY_AFTER_CAP_S, 0.0) == RETRY_AFTER_CAP_S
    assert policy.delay(0, RETRY_AFTER_CAP_S + 0.1, 0.0) is None


def test_max_retries_limit() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(max_retries=MAX_RETRIES_LIMIT + 1)
    assert RetryPolicy(max_retries=0).delay(0, None, 0.0) is None


def test_parse_retry_after_forms() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "Retry-After": "9"}) == 1.5
    date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == 30.0
    assert parse_retry_after({"Retry-After": "-5"}) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_retryable_statuses() -> None:
    assert all(is_retryable_status(s) for s in (408, 409, 429, 500, 502, 503, 504, 599))
    assert not any(is_retryable_status(s) for s in (200, 400, 401, 403, 404, 422))
