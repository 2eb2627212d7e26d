"""The chat model for any OpenAI-compatible endpoint, through ``openai.AsyncOpenAI``.

Retries are done here, not by the client (``max_retries=0``): 429 and 5xx answers and dropped
connections are retried with :class:`~adapters.llm.retry.RetryPolicy`, honouring ``Retry-After``.
A retry only happens before any text was streamed; a failure after that ends the call.

Timeouts: the effective timeout of a call is the smaller of ``ChatRequest.timeout_s`` and the
model's own ``timeout_s``. It bounds each non-streamed attempt as a whole, the wait for a stream
to start, and the silence between two streamed chunks.

Every failure is an :class:`engine.errors.GenerationError` raised ``from`` the library error;
the API key is never logged and is scrubbed from error messages.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from adapters.llm.convert import StreamAssembler, request_to_wire, result_from_completion, scrub
from adapters.llm.retry import RetryPolicy, is_retryable_status, parse_retry_after
from adapters.llm.streams import ReplyStream
from engine.errors import GenerationError
from engine.ports import ChatChunk, ChatRequest, ChatResult
from engine.redaction import redact_url

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 120.0
NO_API_KEY = "no-key"
"""Sent when no key is configured: local servers (Ollama, llama.cpp) ignore it."""

Sleep = Callable[[float], Awaitable[None]]
_T = TypeVar("_T")
_ChunkStream = openai.AsyncStream[ChatCompletionChunk]
"""A streamed reply as the client parses it: one typed chunk per server-sent event."""


class _Retryable(Exception):
    """Internal: an attempt failed in a way worth retrying."""

    def __init__(self, error: GenerationError, retry_after: float | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


class OpenAIChatModel:
    """:class:`engine.ports.ChatModel` over an OpenAI-compatible HTTP API."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retry: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
        jitter: Callable[[], float] = random.random,
        stream_usage: bool = True,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.name = f"openai:{model}"
        self.model = model
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._jitter = jitter
        self._stream_usage = stream_usage
        # Errors name the server by host and port only: userinfo (user:password@) and the
        # query string (?key=...) of the base URL never reach a message.
        self._host = urlsplit(base_url).netloc.rpartition("@")[2] or redact_url(base_url)
        self._secrets = _secrets_of(base_url, api_key)
        self._client = AsyncOpenAI(
            base_url=base_url, api_key=api_key or NO_API_KEY, max_retries=0, timeout=timeout_s
        )

    def __repr__(self) -> str:
        return f"OpenAIChatModel(base_url={redact_url(self.base_url)!r}, model={self.model!r})"

    async def aclose(self) -> None:
        """Release the HTTP connection pool."""
        await self._client.close()

    # ------------------------------------------------------------------ ChatModel

    async def complete(self, request: ChatRequest) -> ChatResult:
        """Run ``request`` without streaming (retried as the policy says)."""
        kwargs = request_to_wire(request, default_model=self.model)
        timeout = self._timeout(request)

        async def attempt() -> ChatResult:
            async with asyncio.timeout(timeout):
                completion = await self._complete(kwargs, limit_s=timeout)
            return result_from_completion(completion)

        return await self._with_retries(attempt, timeout)

    def stream(self, request: ChatRequest) -> OpenAIChatStream:
        """Start a streamed run of ``request``; nothing is sent until it is iterated."""
        return OpenAIChatStream(self, request)

    async def list_models(self) -> list[str]:
        """The model ids the server offers (used by ``tavernbot doctor``)."""

        async def attempt() -> list[str]:
            async with asyncio.timeout(self.timeout_s):
                page = await self._client.models.list()
            return [m.id for m in page.data]

        return await self._with_retries(attempt, self.timeout_s)

    # ------------------------------------------------------------------ internals

    def _timeout(self, request: ChatRequest) -> float:
        return min(request.timeout_s, self.timeout_s) if request.timeout_s > 0 else self.timeout_s

    async def _open_stream(self, request: ChatRequest) -> _ChunkStream:
        kwargs = request_to_wire(request, default_model=self.model)
        if self._stream_usage:
            kwargs["stream_options"] = {"include_usage": True}
        timeout = self._timeout(request)

        async def attempt() -> _ChunkStream:
            async with asyncio.timeout(timeout):
                return await self._client.post(
                    "/chat/completions",
                    body=_body(kwargs, stream=True),
                    cast_to=ChatCompletion,
                    options={"timeout": timeout},
                    stream=True,
                    stream_cls=_ChunkStream,
                )

        return await self._with_retries(attempt, timeout)

    async def _complete(self, kwargs: dict[str, Any], *, limit_s: float) -> ChatCompletion:
        """``POST /chat/completions`` (not streamed) with a body already in wire form."""
        return await self._client.post(
            "/chat/completions",
            body=_body(kwargs, stream=False),
            cast_to=ChatCompletion,
            options={"timeout": limit_s},
        )

    async def _with_retries(self, attempt: Callable[[], Awaitable[_T]], limit_s: float) -> _T:
        tries = 0
        while True:
            try:
                try:
                    return await attempt()
                except (openai.OpenAIError, TimeoutError) as exc:
                    raise self._classify(exc, limit_s) from exc
            except _Retryable as failure:
                delay = self.retry.delay(tries, failure.retry_after, self._jitter())
                if delay is None:
                    if failure.retry_after is not None and tries < self.retry.max_retries:
                        message = (
                            f"{failure.error} (the server asked to wait "
                            f"{failure.retry_after:g}s, more than the "
                            f"{self.retry.retry_after_cap_s:g}s limit)"
                        )
                        raise GenerationError(message, retryable=True) from failure.__cause__
                    raise failure.error from failure.__cause__
                tries += 1
                log.warning(
                    "%s; retrying in %.2fs (retry %d of %d)",
                    failure.error,
                    delay,
                    tries,
                    self.retry.max_retries,
                )
                await self._sleep(delay)

    def _classify(self, exc: BaseException, timeout: float) -> Exception:
        """The engine error for a library error; :class:`_Retryable` when worth retrying."""
        where = f"model server {self._host}"
        if isinstance(exc, openai.APITimeoutError | TimeoutError):
            # Not retried: another full timeout would only double the user's wait.
            return GenerationError(f"{where} did not answer within {timeout:g}s", retryable=True)
        if isinstance(exc, openai.APIStatusError):
            detail = scrub(_status_detail(exc), self._secrets)
            error = GenerationError(
                f"{where} answered {exc.status_code}: {detail}",
                retryable=is_retryable_status(exc.status_code),
            )
            if error.retryable:
                return _Retryable(error, parse_retry_after(exc.response.headers))
            return error
        if isinstance(exc, openai.APIConnectionError):
            detail = scrub(exc.message, self._secrets)
            error = GenerationError(f"connection to {where} failed: {detail}", retryable=True)
            return _Retryable(error, None)
        if isinstance(exc, openai.APIError):
            detail = scrub(exc.message, self._secrets)
            return GenerationError(f"{where} reported an error: {detail}", retryable=True)
        detail = scrub(str(exc), self._secrets)
        return GenerationError(f"{where}: {detail}", retryable=False)

    def _stream_error(self, exc: BaseException, timeout: float) -> GenerationError:
        """The engine error for a failure while a stream is being read (never retried)."""
        classified = self._classify(exc, timeout)
        error = classified.error if isinstance(classified, _Retryable) else classified
        assert isinstance(error, GenerationError)
        return GenerationError(f"{error} (while streaming)", retryable=error.retryable)


def _body(kwargs: dict[str, Any], *, stream: bool) -> dict[str, Any]:
    """The JSON body of ``POST /chat/completions`` for ``chat.completions.create`` arguments.

    ``chat.completions.create`` would first walk every message through the client's parameter
    transformer (typed-dict aliases and file inputs, which plain JSON requests never hold):
    about 2 ms of CPU a turn with a long prompt. The client's documented ``post`` sends the
    same JSON through the same HTTP stack, errors and stream parser.
    """
    body = {k: v for k, v in kwargs.items() if k != "extra_body"}
    body.update(kwargs.get("extra_body", {}))
    body["stream"] = stream
    return body


def _secrets_of(base_url: str, api_key: str | None) -> dict[str, str]:
    """Every secret an error text might quote, with what it is replaced by: the API key and
    the whole base URL (shown redacted), so a server or library echoing either hides it."""
    secrets = {base_url: redact_url(base_url)} if redact_url(base_url) != base_url else {}
    if api_key:
        secrets[api_key] = "***"
    return secrets


def _status_detail(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return exc.message


class OpenAIChatStream(ReplyStream):
    """An in-flight streamed reply (:class:`engine.ports.ChatStream`).

    Iterate it once for :class:`ChatChunk` values; afterwards :attr:`result` holds the whole
    reply with tool calls and usage. :meth:`aclose` (or cancelling the consuming task) aborts
    the HTTP request.
    """

    def __init__(self, model: OpenAIChatModel, request: ChatRequest) -> None:
        super().__init__()
        self._model = model
        self._request = request
        self._raw: _ChunkStream | None = None

    async def aclose(self) -> None:
        """Abort the request and release the connection (safe to call more than once)."""
        self._closed = True
        raw, self._raw = self._raw, None
        if raw is not None:
            await raw.close()
        await super().aclose()

    async def _run(self) -> AsyncIterator[ChatChunk]:
        if self._closed:
            raise GenerationError("the stream was closed before it started")
        model = self._model
        timeout = model._timeout(self._request)
        raw = await model._open_stream(self._request)
        if self._closed:  # closed from another task while the request was being opened
            await raw.close()
            raise GenerationError("the stream was closed", retryable=False)
        self._raw = raw
        assembler = StreamAssembler()
        try:
            async for chunk in raw:
                text = assembler.add(chunk)
                if text:
                    yield ChatChunk(text=text)
        except (openai.OpenAIError, TimeoutError) as exc:
            if self._closed:
                raise GenerationError("the stream was closed", retryable=False) from exc
            raise model._stream_error(exc, timeout) from exc
        finally:
            self._raw = None
            await raw.close()
        self._result = assembler.result()
