"""Benchmark: 200 sessions x 5 turns at once against the fake OpenAI server (200 ms latency).

Every session plays its five turns one after the other (each turn waits for its reply), all
sessions at the same time, through the real ``openai`` client and one shared model; the fake
server runs in a child process, as a real endpoint would. Target:
wall time at most 1.5x of 5 x 200 ms, and no turn lost or duplicated (each session ends with
floors 1..5 committed, holding its own five messages in order, each answered once).

Before the engine runs, the same 200 x 5 pattern runs with the ``openai`` client alone
(streamed requests, no engine, no database) against the same server: the floor that no engine
in this process can go below on this machine. Both are printed side by side.

Run from the repository root: ``python bench/turn_concurrency.py [--db URL] [--sessions N]``
(default: a SQLite file in a temporary folder).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.llm import ChatModelPool  # noqa: E402
from adapters.storage import open_storage  # noqa: E402
from engine.turns.api import SessionKey, Speaker, UserLine  # noqa: E402
from engine.turns.profiles import LLMProfile, NoSecretCipher  # noqa: E402
from engine.turns.service import TavernService  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply  # noqa: E402

LATENCY_S = 0.2
TURNS = 5
TARGET = 1.5


def _reply(body: object) -> FakeReply:
    messages = body.get("messages", []) if isinstance(body, dict) else []
    last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    return FakeReply(text=f"re: {last}", latency_s=LATENCY_S)


async def _play(service: TavernService, key: SessionKey, speaker: Speaker) -> list[float]:
    await service.open_session(key)
    took: list[float] = []
    for turn in range(1, TURNS + 1):
        start = time.perf_counter()
        view = await service.respond(
            key, "main", [UserLine(speaker=speaker, text=f"{key.key}/{turn}")]
        )
        took.append(time.perf_counter() - start)
        assert view.floor == turn and view.text == f"re: {key.key}/{turn}", view
    return took


async def _check(service: TavernService, keys: list[SessionKey]) -> int:
    bad = 0
    for key in keys:
        history = await service.history(key, "main")
        texts = [v.text for v in history]
        if texts != [f"re: {key.key}/{t}" for t in range(1, TURNS + 1)]:
            bad += 1
    return bad


async def _client_only(base_url: str, sessions: int) -> tuple[float, float]:
    """Wall and CPU time of ``sessions`` x TURNS streamed requests through the openai client
    alone (CPU: this process only; the server's is its own)."""
    from openai import AsyncOpenAI, AsyncStream
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

    client = AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)

    async def one(session: int) -> None:
        for turn in range(1, TURNS + 1):
            # The same call the engine's model adapter makes (a body already in wire form).
            stream = await client.post(
                "/chat/completions",
                body={
                    "model": "fake-model",
                    "messages": [{"role": "user", "content": f"client-{session}/{turn}"}],
                    "stream": True,
                    "stream_options": {"include_usage": True},
                },
                cast_to=ChatCompletion,
                stream=True,
                stream_cls=AsyncStream[ChatCompletionChunk],
            )
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
            assert text == f"re: client-{session}/{turn}", text

    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(i) for i in range(sessions)))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    await client.close()
    return wall, cpu


async def serve(max_requests: int) -> None:
    """Child process: the fake server, until standard input closes; then the request count."""
    async with FakeOpenAIServer(
        responder=_reply, max_requests=max_requests, lifetime_s=900.0
    ) as fake:
        print(fake.base_url, flush=True)
        await asyncio.to_thread(sys.stdin.read)
        print(len(fake.chat_requests), flush=True)


async def run(url: str, sessions: int) -> int:
    storage = await open_storage(url)
    pool = ChatModelPool()
    # The fake model runs in its own process, as a real endpoint would: its CPU time is not
    # the engine's.
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--serve",
        str(2 * sessions * TURNS + 10),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None
    base_url = (await server.stdout.readline()).decode().strip()
    client_wall, client_cpu = await _client_only(base_url, sessions)
    profile = LLMProfile(id="environment", model="fake-model", base_url=base_url, max_retries=0)
    service = TavernService(
        storage,
        model_for=lambda p: pool.for_profile(p, NoSecretCipher(), {}),
        default_profile=profile,
    )
    await service.start()  # loads the tokenizer off the event loop, as the app does
    keys = [
        SessionKey(platform="bench", realm=f"r{i}", key=f"s{i}-{time.time_ns()}")
        for i in range(sessions)
    ]
    start, cpu = time.perf_counter(), time.process_time()
    results = await asyncio.gather(
        *(_play(service, k, Speaker(id=k.key, name="Ann")) for k in keys)
    )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    bad = await _check(service, keys)
    server.stdin.close()
    requests = int((await server.stdout.readline()).decode().strip() or 0) - sessions * TURNS
    await server.wait()
    await pool.aclose()
    await storage.close()
    ideal = TURNS * LATENCY_S
    turn_times = [t for r in results for t in r]
    print(
        f"database: {url.split('://')[0]}; {sessions} sessions x {TURNS} turns, "
        f"{LATENCY_S * 1000:.0f} ms model latency (fake server in its own process)"
    )
    print(
        f"wall time: {wall:.2f} s (ideal {ideal:.2f} s): {wall / ideal:.2f}x (target <= {TARGET}x)"
    )
    print(
        f"the openai client alone, same pattern and server: {client_wall:.2f} s = "
        f"{client_wall / ideal:.2f}x, {client_cpu * 1000 / (sessions * TURNS):.2f} ms of CPU per "
        f"request; the engine's turns took {wall / client_wall:.2f}x that wall time and "
        f"{cpu * 1000 / (sessions * TURNS):.2f} ms of CPU per turn (client included)"
    )
    print(
        f"turn latency: median {statistics.median(turn_times) * 1000:.0f} ms, "
        f"max {max(turn_times) * 1000:.0f} ms"
    )
    print(
        f"model requests: {requests} for {sessions * TURNS} turns; sessions with a lost, "
        f"duplicated or reordered turn: {bad}"
    )
    ok = bad == 0 and requests == sessions * TURNS and wall / ideal <= TARGET
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve))
        return 0
    if args.db:
        return asyncio.run(run(args.db, args.sessions))
    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(run(f"sqlite+aiosqlite:///{tmp}/bench.db", args.sessions))


if __name__ == "__main__":
    sys.exit(main())
