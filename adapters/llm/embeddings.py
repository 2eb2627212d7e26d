"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint, through ``openai.AsyncOpenAI``.

:class:`OpenAIEmbedder` is the engine's :class:`~engine.memory.ports.Embedder`. Like the chat
model it retries 429, 5xx and dropped connections itself (:class:`~adapters.llm.retry.RetryPolicy`,
honouring ``Retry-After``; the client's own retries are off), bounds every attempt by
``timeout_s``, and turns every failure into a one-line
:class:`engine.errors.GenerationError` that names the server by host only, with the API key
scrubbed. Known to work: OpenAI ``text-embedding-3-small``, Ollama ``nomic-embed-text``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from urllib.parse import urlsplit

import openai
from openai import AsyncOpenAI

from adapters.llm.convert import scrub
from adapters.llm.retry import RetryPolicy, is_retryable_status, parse_retry_after
from engine.errors import GenerationError
from engine.redaction import redact_url

log = logging.getLogger(__name__)

DEFAULT_EMBED_TIMEOUT_S = 30.0
NO_API_KEY = "no-key"
"""Sent when no key is configured: local servers (Ollama, llama.cpp) ignore it."""

Sleep = Callable[[float], Awaitable[None]]


class _Retry(Exception):
    def __init__(self, error: GenerationError, retry_after: float | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class OpenAIEmbedder:
    """:class:`engine.memory.ports.Embedder` over an OpenAI-compatible HTTP API."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = DEFAULT_EMBED_TIMEOUT_S,
        retry: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        if not model:
            raise ValueError("an embedding model name is required")
        self._model = model
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._jitter = jitter
        self._host = urlsplit(base_url).netloc.rpartition("@")[2] or redact_url(base_url)
        self._secrets = {api_key: "***"} if api_key else {}
        if redact_url(base_url) != base_url:
            self._secrets[base_url] = redact_url(base_url)
        self._client = AsyncOpenAI(
            base_url=base_url, api_key=api_key or NO_API_KEY, max_retries=0, timeout=timeout_s
        )

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(base_url={redact_url(self.base_url)!r}, model={self._model!r})"

    @property
    def model(self) -> str:
        """The embedding model's name."""
        return self._model

    async def aclose(self) -> None:
        """Release the HTTP connection pool."""
        await self._client.close()

    async def embed(self, texts: Sequence[str]) -> list[tuple[float, ...]]:
        """One vector per text, in order (an empty list for no texts)."""
        if not texts:
            return []
        tries = 0
        while True:
            try:
                return await self._attempt(list(texts))
            except _Retry as failure:
                delay = self.retry.delay(tries, failure.retry_after, self._jitter())
                if delay is None:
                    raise failure.error from failure.__cause__
                tries += 1
                log.warning("%s; retrying in %.2fs (retry %d)", failure.error, delay, tries)
                await self._sleep(delay)

    async def _attempt(self, texts: list[str]) -> list[tuple[float, ...]]:
        try:
            async with asyncio.timeout(self.timeout_s):
                answer = await self._client.embeddings.create(
                    model=self._model, input=texts, encoding_format="float"
                )
        except (openai.OpenAIError, TimeoutError) as exc:
            raise self._classify(exc) from exc
        ordered = sorted(answer.data, key=lambda item: item.index)
        if len(ordered) != len(texts):
            raise GenerationError(
                f"embeddings server {self._host} returned {len(ordered)} vectors "
                f"for {len(texts)} texts",
                retryable=False,
            )
        return [tuple(float(x) for x in item.embedding) for item in ordered]

    def _classify(self, exc: BaseException) -> Exception:
        where = f"embeddings server {self._host}"
        if isinstance(exc, openai.APITimeoutError | TimeoutError):
            return GenerationError(
                f"{where} did not answer within {self.timeout_s:g}s", retryable=True
            )
        if isinstance(exc, openai.APIStatusError):
            detail = scrub(_detail(exc), self._secrets)
            error = GenerationError(
                f"{where} answered {exc.status_code}: {detail}",
                retryable=is_retryable_status(exc.status_code),
            )
            if error.retryable:
                return _Retry(error, parse_retry_after(exc.response.headers))
            return error
        if isinstance(exc, openai.APIConnectionError):
            detail = scrub(exc.message, self._secrets)
            error = GenerationError(f"connection to {where} failed: {detail}", retryable=True)
            return _Retry(error, None)
        detail = scrub(str(exc), self._secrets)
        return GenerationError(f"{where}: {detail}", retryable=False)


def _detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return exc.message
