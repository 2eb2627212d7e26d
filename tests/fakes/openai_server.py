"""A loopback OpenAI-compatible chat server for tests, driven through the real ``openai`` client.

It listens on 127.0.0.1 on an ephemeral port and answers ``POST /v1/chat/completions`` (with and
without ``stream: true``), ``GET /v1/models`` and ``POST /v1/embeddings`` (deterministic vectors
from :mod:`tests.fakes.fake_embeddings`; failures queued in ``embedding_script``).
What it answers is scripted per test:

* ``server.script(...)`` queues responses, used one per request in order;
* when the queue is empty, ``responder(request_json)`` decides (by default an echo of the last
  user message).

A response is a :class:`FakeReply` (text and/or tool calls, optional latency, per-chunk delay, an
error event or a dropped connection after some chunks), a :class:`FakeError` (an HTTP error
status with an optional ``Retry-After``) or a :class:`FakeHang` (never answers; the handler waits
until the client goes away, the hang limit passes or the server stops).

Every request is recorded in :attr:`FakeOpenAIServer.requests` (JSON body, headers, whether the
client disconnected early), so tests can assert on prompts, retries and cancellation.

``memory_agent=FakeReply(...)`` answers the memory agent's requests (a compat_plus or native
session with memory on asks it after each committed turn, from a background task) with that
reply, outside the script and the recorded ``requests``: they go to :attr:`agent_requests`,
so a test scripts the narrator alone, in order.

The server bounds itself: after ``max_requests`` requests it answers 503 without scripting, a
hang lasts at most ``hang_limit_s``, and the server stops itself after ``lifetime_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from aiohttp import web

from engine.memory.agent_context import AGENT_SYSTEM_PROMPT
from tests.fakes.fake_embeddings import FAKE_EMBEDDING_MODEL, fake_embedding

DEFAULT_MAX_REQUESTS = 200
DEFAULT_HANG_LIMIT_S = 30.0
DEFAULT_LIFETIME_S = 120.0
DEFAULT_CHUNK_CHARS = 8
DEFAULT_MODELS = ("fake-model",)
MEMORY_AGENT_PROMPT_START = AGENT_SYSTEM_PROMPT.split("\n", 1)[0][:60]
"""How the memory agent's request begins (its system message), to tell it from the narrator's."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeToolCall:
    """A tool call the fake model makes; ``arguments`` is JSON text (streamed in pieces)."""

    name: str
    arguments: str
    id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeReply:
    """A successful answer.

    ``latency_s`` passes before the response headers; ``chunk_delay_s`` between stream chunks.
    ``error_after_chunks`` sends an error event (status ``error_status``) after that many content
    chunks and ends the stream: the "500 mid-stream". ``drop_after_chunks`` instead closes the
    connection abruptly. ``usage`` of None counts words.
    """

    text: str = ""
    tool_calls: Sequence[FakeToolCall] = ()
    finish_reason: str | None = None
    usage: tuple[int, int] | None = None
    chunk_chars: int = DEFAULT_CHUNK_CHARS
    latency_s: float = 0.0
    chunk_delay_s: float = 0.0
    error_after_chunks: int | None = None
    error_status: int = 500
    drop_after_chunks: int | None = None
    hold: asyncio.Event | None = None
    """When given, the stream stops after its first content chunk until the test sets it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeError:
    """An HTTP error answer, e.g. 429 with ``retry_after="2"`` or a plain 500."""

    status: int
    message: str = "scripted error"
    retry_after: str | None = None
    latency_s: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class FakeHang:
    """Never answer: wait until the client disconnects, the hang limit passes or shutdown."""


FakeResponse = FakeReply | FakeError | FakeHang
QUIET_MEMORY_AGENT = FakeReply(text="{}")
"""A memory agent answer that plans nothing, for ``FakeOpenAIServer(memory_agent=...)``."""
Responder = Callable[[Mapping[str, Any]], FakeResponse]


@dataclass(slots=True, kw_only=True)
class RecordedRequest:
    """One request the server received."""

    index: int
    path: str
    body: Mapping[str, Any]
    headers: Mapping[str, str]
    disconnected: bool = False
    finished: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def messages(self) -> list[Mapping[str, Any]]:
        """The chat messages of the request."""
        return list(self.body.get("messages", []))

    @property
    def last_user_text(self) -> str:
        """The content of the last user message ("" when there is none)."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return str(message.get("content") or "")
        return ""


def echo_responder(body: Mapping[str, Any]) -> FakeResponse:
    """The default: answers ``echo: <last user message>``."""
    text = ""
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user":
            text = str(message.get("content") or "")
            break
    return FakeReply(text=f"echo: {text}")


def _is_memory_agent(body: Mapping[str, Any]) -> bool:
    messages = body.get("messages") or []
    first = messages[0] if messages and isinstance(messages[0], Mapping) else {}
    content = first.get("content")
    return (
        first.get("role") == "system"
        and isinstance(content, str)
        and content.startswith(MEMORY_AGENT_PROMPT_START)
    )


def _words(text: str) -> int:
    return len(text.split())


class FakeOpenAIServer:
    """The fake server; use ``async with FakeOpenAIServer() as server: server.base_url``."""

    def __init__(
        self,
        *,
        responder: Responder = echo_responder,
        models: Sequence[str] = DEFAULT_MODELS,
        max_requests: int = DEFAULT_MAX_REQUESTS,
        hang_limit_s: float = DEFAULT_HANG_LIMIT_S,
        lifetime_s: float = DEFAULT_LIFETIME_S,
        memory_agent: FakeResponse | None = None,
    ) -> None:
        self.responder = responder
        self.memory_agent = memory_agent
        self.agent_requests: list[RecordedRequest] = []
        """The memory agent's requests, when ``memory_agent`` answers them."""
        self.models = tuple(models)
        self.max_requests = max_requests
        self.hang_limit_s = hang_limit_s
        self.lifetime_s = lifetime_s
        self.requests: list[RecordedRequest] = []
        self.overflow = 0
        self._queue: deque[FakeResponse] = deque()
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._stopping = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._counter = 0
        self._arrived = asyncio.Event()
        self.embedding_requests: list[Mapping[str, Any]] = []
        """The bodies of ``POST /v1/embeddings`` (kept apart from the chat requests)."""
        self.embedding_script: deque[FakeError | FakeHang] = deque()
        """Failures the embeddings endpoint answers first, one per request."""

    # ------------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        """The API root to give the client, ending in ``/v1``."""
        if not self._port:
            raise RuntimeError("the fake server is not running")
        return f"http://127.0.0.1:{self._port}/v1"

    async def start(self) -> None:
        """Listen on an ephemeral loopback port."""
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/embeddings", self._embeddings)
        # handler_cancellation: a client that goes away cancels its handler, which is how a
        # hung or streaming response learns that the request was aborted.
        runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=1.0
        )
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        sockets: list[Any] = list(getattr(server, "sockets", None) or [])
        self._port = sockets[0].getsockname()[1]
        self._runner = runner
        watchdog = asyncio.get_running_loop().create_task(self._watchdog())
        self._tasks.add(watchdog)
        watchdog.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        """Stop listening, release hung handlers and the watchdog."""
        self._stopping.set()
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                task.cancel()
        for task in list(self._tasks):
            if task is not asyncio.current_task():
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def __aenter__(self) -> FakeOpenAIServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _watchdog(self) -> None:
        # The server stops itself after its lifetime so a forgotten one never lingers.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), self.lifetime_s)
            return
        self._stopping.set()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    # ------------------------------------------------------------------ scripting

    def script(self, *responses: FakeResponse) -> None:
        """Queue responses, used one per chat request before the responder is asked."""
        self._queue.extend(responses)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded chat-completion requests, in arrival order."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    async def wait_requests(self, count: int, timeout_s: float = 5.0) -> None:
        """Wait (bounded) until at least ``count`` requests have arrived."""
        async with asyncio.timeout(timeout_s):
            while len(self.requests) < count:
                self._arrived.clear()
                await self._arrived.wait()

    async def wait_done(self, index: int, timeout_s: float = 5.0) -> RecordedRequest:
        """Wait (bounded) until request ``index`` has finished or been abandoned."""
        recorded = self.requests[index]
        await asyncio.wait_for(recorded.done.wait(), timeout_s)
        return recorded

    # ------------------------------------------------------------------ handlers

    def _record(self, request: web.Request, body: Mapping[str, Any]) -> RecordedRequest:
        recorded = RecordedRequest(
            index=len(self.requests), path=request.path, body=body, headers=dict(request.headers)
        )
        self.requests.append(recorded)
        self._arrived.set()
        return recorded

    async def _models(self, request: web.Request) -> web.StreamResponse:
        recorded = self._record(request, {})
        recorded.finished = True
        recorded.done.set()
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.embedding_requests.append(body)
        if self.embedding_script:
            failure = self.embedding_script.popleft()
            if isinstance(failure, FakeHang):
                await self._hang()
                return web.Response(status=504)
            headers = {"Retry-After": failure.retry_after} if failure.retry_after else {}
            return _error_response(failure.status, failure.message, headers)
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        data = [
            {"object": "embedding", "index": i, "embedding": fake_embedding(str(text))}
            for i, text in enumerate(texts)
        ]
        tokens = sum(_words(str(t)) for t in texts)
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": str(body.get("model") or FAKE_EMBEDDING_MODEL),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _error_response(400, "body is not JSON")
        if self.memory_agent is not None and _is_memory_agent(body):
            agent = RecordedRequest(
                index=len(self.agent_requests), path=request.path, body=body, headers={}
            )
            self.agent_requests.append(agent)
            try:
                return await self._answer(request, body, self.memory_agent)
            finally:
                agent.finished = True
                agent.done.set()
        recorded = self._record(request, body)
        try:
            if len(self.requests) > self.max_requests:
                self.overflow += 1
                return _error_response(503, "fake server request limit reached")
            response = self._queue.popleft() if self._queue else self.responder(body)
            result = await self._answer(request, body, response)
            recorded.finished = not isinstance(response, FakeHang)
            return result
        except (asyncio.CancelledError, ConnectionResetError):
            recorded.disconnected = True
            raise
        finally:
            recorded.done.set()

    async def _answer(
        self, request: web.Request, body: Mapping[str, Any], response: FakeResponse
    ) -> web.StreamResponse:
        if isinstance(response, FakeHang):
            await self._hang()
            # The hang limit (or shutdown) passed: drop the connection without an answer.
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=504)
        if response.latency_s:
            await asyncio.sleep(response.latency_s)
        if isinstance(response, FakeError):
            headers = {"Retry-After": response.retry_after} if response.retry_after else {}
            return _error_response(response.status, response.message, headers)
        model = str(body.get("model") or self.models[0])
        if body.get("stream"):
            options = body.get("stream_options") or {}
            usage = bool(options.get("include_usage"))
            return await self._stream(request, body, response, model, usage)
        return web.json_response(_completion(body, response, model))

    async def _hang(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), self.hang_limit_s)

    async def _stream(
        self,
        request: web.Request,
        body: Mapping[str, Any],
        reply: FakeReply,
        model: str,
        include_usage: bool,
    ) -> web.StreamResponse:
        self._counter += 1
        cid = f"chatcmpl-fake-{self._counter}"
        out = web.StreamResponse(
            status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await out.prepare(request)

        async def send(payload: Mapping[str, Any] | str) -> None:
            data = payload if isinstance(payload, str) else json.dumps(payload)
            await out.write(f"data: {data}\n\n".encode())

        def chunk(delta: Mapping[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": dict(delta), "finish_reason": finish}],
            }

        await send(chunk({"role": "assistant", "content": ""}))
        pieces = [
            reply.text[i : i + reply.chunk_chars]
            for i in range(0, len(reply.text), max(1, reply.chunk_chars))
        ]
        for sent, piece in enumerate(pieces):
            if reply.error_after_chunks is not None and sent >= reply.error_after_chunks:
                break
            if reply.drop_after_chunks is not None and sent >= reply.drop_after_chunks:
                break
            if reply.chunk_delay_s:
                await asyncio.sleep(reply.chunk_delay_s)
            if sent == 1 and reply.hold is not None:
                await reply.hold.wait()
            await send(chunk({"content": piece}))
        if reply.error_after_chunks is not None:
            error = {"message": "scripted failure mid-stream", "type": "server_error"}
            await send({"error": {**error, "code": reply.error_status}})
            await out.write_eof()
            return out
        if reply.drop_after_chunks is not None:
            transport = request.transport
            if transport is not None:
                transport.abort()
            return out
        for index, call in enumerate(reply.tool_calls):
            call_id = call.id or f"call_{self._counter}_{index}"
            head = {"index": index, "id": call_id, "type": "function"}
            head["function"] = {"name": call.name, "arguments": ""}
            await send(chunk({"tool_calls": [head]}))
            half = len(call.arguments) // 2
            for part in (call.arguments[:half], call.arguments[half:]):
                if part:
                    delta = {"index": index, "function": {"arguments": part}}
                    await send(chunk({"tool_calls": [delta]}))
        await send(chunk({}, _finish(reply)))
        if include_usage:
            final = chunk({})
            final["choices"] = []
            final["usage"] = _usage(body, reply)
            await send(final)
        await send("[DONE]")
        await out.write_eof()
        return out


def _finish(reply: FakeReply) -> str:
    if reply.finish_reason:
        return reply.finish_reason
    return "tool_calls" if reply.tool_calls else "stop"


def _usage(body: Mapping[str, Any], reply: FakeReply) -> dict[str, int]:
    if reply.usage is not None:
        prompt, completion = reply.usage
    else:
        prompt = sum(_words(str(m.get("content") or "")) for m in body.get("messages", []))
        completion = _words(reply.text)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _completion(body: Mapping[str, Any], reply: FakeReply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.id or f"call_{index}",
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for index, call in enumerate(reply.tool_calls)
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
        "usage": _usage(body, reply),
    }


def _error_response(
    status: int, message: str, headers: Mapping[str, str] | None = None
) -> web.Response:
    payload = {"error": {"message": message, "type": "fake_error", "code": status}}
    return web.json_response(payload, status=status, headers=dict(headers or {}))
