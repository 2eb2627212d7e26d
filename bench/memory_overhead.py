"""Benchmark: a turn's latency with long-term memory on against the same turn with it off.

One ``TavernService`` with the memory service the app builds (offline model, offline
summariser) plays two console sessions in ``compat_plus``: one with memory on (the default),
one with ``memory off``. Each first plays ``HISTORY`` turns, so the memory-on session has
records to retrieve from; then turns alternate between the two sessions and the medians of
``respond`` are compared. Memory's own work (the agent, compaction) runs after the commit in
the service's owned tasks, which the bench drains between rounds so they never overlap a timed
turn of the other session. Target (issue 18): memory on at most 1.1x memory off.

Run from the repository root: ``python bench/memory_overhead.py`` (``--cpu``: each call's
CPU time of the process, all threads, instead of wall time; steadier on a busy machine).

``--parts`` adds a third session, memory on, whose retrieval hands back the memory-on
session's latest block without ranking anything (and marks nothing): its turns carry a prompt
as long as the memory-on turns', so ``block - off`` is what the longer prompt costs and
``on - block`` what retrieval and its use marks cost.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.llm import OfflineChatModel  # noqa: E402
from adapters.storage import open_storage  # noqa: E402
from bot.scheduler import build_memory_service  # noqa: E402
from engine.memory.injection import InjectionResult  # noqa: E402
from engine.memory.lineage import Viewpoint  # noqa: E402
from engine.memory.service import MemoryService  # noqa: E402
from engine.turns.api import SessionKey, Speaker, UserLine  # noqa: E402
from engine.turns.profiles import environment_profile  # noqa: E402
from engine.turns.service import TavernService  # noqa: E402

HISTORY = 200
TURNS = 60
TARGET = 1.1
CPU = "--cpu" in sys.argv[1:]
PARTS = "--parts" in sys.argv[1:]
CLOCK = time.process_time if CPU else time.perf_counter
ANN = Speaker(id="u1", name="Ann")
ON = SessionKey(platform="console", realm="local", key="memory-on")
OFF = SessionKey(platform="console", realm="local", key="memory-off")
BLOCK = SessionKey(platform="console", realm="local", key="memory-fixed-block")


def _fixed_block_for(memory: MemoryService, playing: list[SessionKey]) -> None:
    """``--parts``: while ``playing[0]`` is BLOCK, retrieval returns the memory-on session's
    latest block (no ids: nothing is marked) instead of ranking."""
    real = memory.retrieve
    latest: list[InjectionResult] = []

    async def retrieve(
        view: Viewpoint,
        message: str,
        recent_turns: Sequence[str] = (),
        budget: int | None = None,
        *,
        mark_used: bool = True,
    ) -> InjectionResult:
        if playing[0] == BLOCK and latest:
            return replace(latest[-1], record_ids=())
        result = await real(view, message, recent_turns, budget, mark_used=mark_used)
        if playing[0] == ON:
            latest[:] = [result]
        return result

    memory.retrieve = retrieve  # type: ignore[method-assign]


def _line(i: int) -> list[UserLine]:
    return [UserLine(speaker=ANN, text=f"I ask the innkeeper about the lantern, time {i}.")]


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        storage = await open_storage(f"sqlite+aiosqlite:///{tmp}/bench.db")
        model = OfflineChatModel(announce=False)
        memory = build_memory_service(storage, model=None, model_name="offline")
        service = TavernService(
            storage,
            model_for=lambda p: model,
            default_profile=environment_profile(provider="offline", base_url=None, model="x"),
            memory=memory,
        )
        await service.start()
        keys = (ON, OFF, BLOCK) if PARTS else (ON, OFF)
        playing = [ON]
        if PARTS:
            _fixed_block_for(memory, playing)
        for key in keys:
            await service.open_session(key)
        await service.set_session_option(OFF, "memory", "off")
        for i in range(HISTORY):
            for key in keys:
                playing[0] = key
                await service.respond(key, "main", _line(i))
            await service.drain()
        records = len(await service.memories(ON, "main", limit=200))
        times: dict[SessionKey, list[float]] = {key: [] for key in keys}
        for i in range(TURNS):
            shift = i % len(keys)  # each session goes first, second (and third) in turn
            for key in keys[shift:] + keys[:shift]:
                playing[0] = key
                start = CLOCK()
                await service.respond(key, "main", _line(HISTORY + i))
                times[key].append(CLOCK() - start)
                await service.drain()  # memory's after-commit work, outside the timed call
        await service.aclose()
        await storage.close()
    on, off = (statistics.median(times[k]) * 1000 for k in (ON, OFF))
    ratio = on / off
    block = statistics.median(times[BLOCK]) * 1000 if PARTS else None
    print(
        f"{HISTORY} turns of history each; memory records the memory-on session lists: {records}"
    )
    if CPU:
        print("times are the process's CPU time per call, not wall time")
    print(f"respond, memory on:  {on:.2f} ms (median of {TURNS})")
    print(f"respond, memory off: {off:.2f} ms (median of {TURNS})")
    print(f"memory on / off: {ratio:.2f}x (target <= {TARGET}x)")
    if block is not None:
        print(f"respond, memory on with a fixed block (no retrieval): {block:.2f} ms")
        print(
            f"of the {on - off:.2f} ms on - off: the longer prompt {block - off:.2f} ms,"
            f" retrieval and use marks {on - block:.2f} ms"
        )
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
