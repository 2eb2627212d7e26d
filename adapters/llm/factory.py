"""Building the chat model a profile or the configuration names."""

from __future__ import annotations

from typing import Protocol, get_args

from engine.errors import ConfigurationError
from engine.ports import ChatModel
from engine.turns.profiles import Provider

PROVIDERS: tuple[Provider, ...] = get_args(Provider)
"""The providers :func:`build_chat_model` knows."""


class ClosableChatModel(ChatModel, Protocol):
    """A chat model built here: it may hold a connection pool, released by :meth:`aclose`."""

    async def aclose(self) -> None:
        """Release the model's connections (safe to call more than once)."""
        ...


def build_chat_model(
    provider: str,
    base_url: str | None,
    api_key: str | None,
    model: str,
    timeout_s: float = 120.0,
    max_retries: int = 3,
    *,
    offline_chunk_delay_s: float = 0.0,
) -> ClosableChatModel:
    """The :class:`engine.ports.ChatModel` for ``provider``.

    ``"offline"``, or ``"openai"`` without a ``base_url``, gives the offline provider (which logs
    that it is offline); ``"openai"`` gives :class:`OpenAIChatModel` for ``base_url``. Raises
    :class:`engine.errors.ConfigurationError` for an unknown provider or a bad limit.
    """
    if provider not in PROVIDERS:
        raise ConfigurationError(
            f"unknown model provider {provider!r}; expected one of {', '.join(PROVIDERS)}"
        )
    if provider == "offline" or not base_url:
        from adapters.llm.offline import OfflineChatModel

        return OfflineChatModel(chunk_delay_s=offline_chunk_delay_s)
    # Imported here so that the offline provider starts without loading the openai client.
    from adapters.llm.openai_model import OpenAIChatModel
    from adapters.llm.retry import MAX_RETRIES_LIMIT, RetryPolicy

    if not 0 <= max_retries <= MAX_RETRIES_LIMIT:
        raise ConfigurationError(
            f"max_retries must be between 0 and {MAX_RETRIES_LIMIT}, got {max_retries}"
        )
    if timeout_s <= 0:
        raise ConfigurationError(f"timeout_s must be > 0, got {timeout_s}")
    return OpenAIChatModel(
        base_url=base_url,
        model=model,
        api_key=api_key,
        timeout_s=timeout_s,
        retry=RetryPolicy(max_retries=max_retries),
    )
