"""with_retries: waits the platform's retry-after, backs off on 5xx, never drops silently."""

from __future__ import annotations

from dataclasses import dataclass, field

import discord
import pytest

from adapters.discord.outlets import DeliveryError, OutletGoneError, with_retries


@dataclass
class Response:
    status: int
    reason: str = "x"
    headers: dict[str, str] = field(default_factory=dict)


def _error(status: int, code: int = 0, **headers: str) -> discord.HTTPException:
    kind = {404: discord.NotFound, 403: discord.Forbidden}.get(status, discord.HTTPException)
    if status >= 500:
        kind = discord.DiscordServerError
    return kind(Response(status, headers=headers), {"code": code, "message": "m"})


def _flaky(*errors: Exception):  # type: ignore[no-untyped-def]
    calls: list[int] = []

    async def op() -> str:
        calls.append(1)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return "ok"

    return op, calls


async def test_rate_limits_and_server_errors_are_retried() -> None:
    op, calls = _flaky(
        _error(429, **{"Retry-After": "0.001"}), _error(502), discord.RateLimited(0.001)
    )
    assert await with_retries(op, what="send", attempts=4, backoff_s=0.001) == "ok"
    assert len(calls) == 4


async def test_gone_webhook_or_message_is_reported_at_once() -> None:
    op, calls = _flaky(_error(404, 10015))
    with pytest.raises(OutletGoneError, match="10015"):
        await with_retries(op, what="send", attempts=5, backoff_s=0.001)
    assert len(calls) == 1


async def test_a_bad_request_is_not_retried() -> None:
    op, calls = _flaky(_error(400, 50035))
    with pytest.raises(discord.HTTPException):
        await with_retries(op, what="send", attempts=5, backoff_s=0.001)
    assert len(calls) == 1


async def test_attempts_are_bounded_and_end_in_delivery_error() -> None:
    op, calls = _flaky(*[_error(503)] * 10)
    with pytest.raises(DeliveryError, match="not delivered after 3 attempts"):
        await with_retries(op, what="send", attempts=3, backoff_s=0.001)
    assert len(calls) == 3
