"""Benchmark: 200 sessions x 5 turns at once against the fake OpenAI server (200 ms latency).

Every session plays its five turns one after the other (each turn waits for its reply), all
sessions at the same time, through the real ``openai`` client and one shared model; the fake
server runs in a child process, as a real endpoint would. No turn may be lost or duplicated
(each session ends with floors 1..5 committed, holding its own five messages in order, each
answered once).

Before the engine runs, the same 200 x 5 pattern runs with the ``openai`` client alone
(streamed requests, no engine, no database) against the same server: the floor that no engine
in this process can go below on this machine. Issue 19's targets compare the two, side by
side in one run: the engine's CPU per turn at most ``CPU_TARGET`` x the client's CPU per
request, and the engine's wall time at most ``WALL_TARGET`` x the client's (issue 5's target,
1.5x of the ideal 5 x 200 ms, is still printed).

``--processes N`` (PostgreSQL only: SQLite serves one process) then plays the same load again
with real worker processes, first one, then N splitting the sessions, and prints the
throughput and the CPU each worker used.

Run from the repository root:
``python bench/turn_concurrency.py [--db URL] [--sessions N] [--processes N]``
(default: a SQLite file in a temporary folder).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.llm import ChatModelPool  # noqa: E402
from adapters.storage import open_storage  # noqa: E402
from adapters.storage.branch_locks import branch_order_for  # noqa: E402
from engine.turns.api import SessionKey, Speaker, UserLine  # noqa: E402
from engine.turns.profiles import LLMProfile, NoSecretCipher  # noqa: E402
from engine.turns.service import TavernService  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply  # noqa: E402

LATENCY_S = 0.2
TURNS = 5
TARGET = 1.5
"""Issue 5's target: wall time vs the ideal 5 x 200 ms (printed for the record)."""
CPU_TARGET = 2.0
"""Issue 19: the engine's CPU per turn vs the openai client's own CPU per streamed request."""
WALL_TARGET = 2.0
"""Issue 19: the engine's wall time vs the openai client alone on the same pattern."""
WORKER_TIMEOUT_S = 600.0
"""How long the parent waits for a worker process before it kills it."""


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


def _service(storage: Any, pool: ChatModelPool, base_url: str) -> tuple[TavernService, Any]:
    """The service as the app composes it: on PostgreSQL its branch order takes advisory
    locks, so turns keep their order across processes (and pay for it here)."""
    profile = LLMProfile(id="environment", model="fake-model", base_url=base_url, max_retries=0)
    locks = branch_order_for(storage.engine)
    service = TavernService(
        storage,
        model_for=lambda p: pool.for_profile(p, NoSecretCipher(), {}),
        default_profile=profile,
        locks=locks,
    )
    return service, locks


async def _close(service: TavernService, locks: Any) -> None:
    """A clean stop, as the app's: after-commit work, the lease, the lock connections."""
    await service.aclose()
    await service.release_lease()
    if hasattr(locks, "aclose"):
        await locks.aclose()


def _keys(sessions: range, tag: str) -> list[SessionKey]:
    return [SessionKey(platform="bench", realm=f"r{i}", key=f"{tag}-s{i}") for i in sessions]


async def worker(url: str, base_url: str, first: int, last: int, tag: str) -> None:
    """Child process: sessions ``first``..``last - 1`` once the parent says go (a line on
    standard input); prints one JSON line with its wall and CPU time and its checks."""
    storage = await open_storage(url)
    pool = ChatModelPool()
    service, locks = _service(storage, pool, base_url)
    await service.start()
    keys = _keys(range(first, last), tag)
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(_play(service, k, Speaker(id=k.key, name="Ann")) for k in keys))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    bad = await _check(service, keys)
    await _close(service, locks)
    await pool.aclose()
    await storage.close()
    print(json.dumps({"wall": wall, "cpu": cpu, "bad": bad, "turns": len(keys) * TURNS}))


async def _spawn_workers(
    url: str, base_url: str, sessions: int, processes: int, tag: str
) -> tuple[float, list[dict[str, Any]]]:
    """``processes`` real worker processes splitting ``sessions``: the wall time from the
    go signal until the last finished, and each worker's report."""
    bounds = [sessions * n // processes for n in range(processes + 1)]
    children = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--worker",
            json.dumps([url, base_url, bounds[n], bounds[n + 1], f"{tag}-{n}"]),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        for n in range(processes)
    ]
    try:
        async with asyncio.timeout(WORKER_TIMEOUT_S):
            for child in children:
                assert child.stdout is not None
                assert (await child.stdout.readline()).strip() == b"ready"
            start = time.perf_counter()
            for child in children:
                assert child.stdin is not None
                child.stdin.write(b"go\n")
                await child.stdin.drain()
            reports = []
            for child in children:
                assert child.stdout is not None
                reports.append(json.loads(await child.stdout.readline()))
            wall = time.perf_counter() - start
            for child in children:
                await child.wait()
    finally:
        for child in children:
            if child.returncode is None:
                child.kill()
                await child.wait()
    return wall, reports


async def run(url: str, sessions: int, processes: int) -> int:
    storage = await open_storage(url)
    pool = ChatModelPool()
    passes = 2 + (1 + processes if processes > 1 else 0)
    # The fake model runs in its own process, as a real endpoint would: its CPU time is not
    # the engine's.
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--serve",
        str(passes * sessions * TURNS + 10),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert server.stdin is not None and server.stdout is not None
    base_url = (await server.stdout.readline()).decode().strip()
    client_wall, client_cpu = await _client_only(base_url, sessions)
    service, locks = _service(storage, pool, base_url)
    await service.start()  # loads the tokenizer off the event loop, as the app does
    keys = _keys(range(sessions), f"{time.time_ns()}")
    start, cpu = time.perf_counter(), time.process_time()
    results = await asyncio.gather(
        *(_play(service, k, Speaker(id=k.key, name="Ann")) for k in keys)
    )
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    bad = await _check(service, keys)
    spread: list[tuple[int, float, list[dict[str, Any]]]] = []
    if processes > 1:
        for count in (1, processes):
            took, reports = await _spawn_workers(
                url, base_url, sessions, count, f"{time.time_ns()}-p{count}"
            )
            spread.append((count, took, reports))
    server.stdin.close()
    answered = int((await server.stdout.readline()).decode().strip() or 0)
    requests = answered - sessions * TURNS
    await server.wait()
    await _close(service, locks)
    await pool.aclose()
    await storage.close()
    ideal = TURNS * LATENCY_S
    turns = sessions * TURNS
    turn_times = [t for r in results for t in r]
    cpu_ratio = (cpu / turns) / (client_cpu / turns)
    wall_ratio = wall / client_wall
    print(
        f"database: {url.split('://')[0]}; {sessions} sessions x {TURNS} turns, "
        f"{LATENCY_S * 1000:.0f} ms model latency (fake server in its own process)"
    )
    print(
        f"the openai client alone, same pattern and server: {client_wall:.2f} s, "
        f"{client_cpu * 1000 / turns:.2f} ms of CPU per request"
    )
    print(
        f"the engine: {wall:.2f} s, {cpu * 1000 / turns:.2f} ms of CPU per turn (client "
        f"included); vs the client alone: CPU {cpu_ratio:.2f}x (target <= {CPU_TARGET}x), "
        f"wall {wall_ratio:.2f}x (target <= {WALL_TARGET}x)"
    )
    print(f"wall time vs the ideal {ideal:.2f} s: {wall / ideal:.2f}x (issue 5: <= {TARGET}x)")
    print(
        f"turn latency: median {statistics.median(turn_times) * 1000:.0f} ms, "
        f"max {max(turn_times) * 1000:.0f} ms"
    )
    lost = bad
    for count, took, reports in spread:
        done = sum(r["turns"] for r in reports)
        lost += sum(r["bad"] for r in reports) + (turns - done)
        cpus = ", ".join(f"{r['cpu']:.2f} s" for r in reports)
        print(
            f"{count} worker process(es): {took:.2f} s, {done / took:.0f} turns/s; CPU "
            f"per worker {cpus} ({sum(r['cpu'] for r in reports) * 1000 / done:.2f} ms per "
            f"turn); sessions with a bad turn: {sum(r['bad'] for r in reports)}"
        )
    if len(spread) == 2:
        one, many = spread[0][1], spread[1][1]
        print(f"throughput, {processes} processes vs 1: {one / many:.2f}x")
    expected = turns * (passes - 1)
    print(
        f"model requests: {answered} for {expected} turns and requests; sessions with a "
        f"lost, duplicated or reordered turn: {lost}"
    )
    ok = lost == 0 and requests == turns * (passes - 2)
    ok = ok and cpu_ratio <= CPU_TARGET and wall_ratio <= WALL_TARGET
    return 0 if ok else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="database URL (default: a temporary SQLite file)")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument(
        "--processes", type=int, default=1, help="also play the load with 1 and N processes"
    )
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve))
        return 0
    if args.worker:
        url, base_url, first, last, tag = json.loads(args.worker)
        asyncio.run(worker(url, base_url, first, last, tag))
        return 0
    if args.processes > 1 and not (args.db or "").startswith("postgresql"):
        parser.error("--processes needs a PostgreSQL --db: SQLite serves one process")
    if args.db:
        return asyncio.run(run(args.db, args.sessions, args.processes))
    with tempfile.TemporaryDirectory() as tmp:
        return asyncio.run(run(f"sqlite+aiosqlite:///{tmp}/bench.db", args.sessions, 1))


if __name__ == "__main__":
    sys.exit(main())
