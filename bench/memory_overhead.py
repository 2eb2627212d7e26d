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
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from adapters.llm import OfflineChatModel  # noqa: E402
from adapters.storage import open_storage  # noqa: E402
from bot.scheduler import build_memory_service  # noqa: E402
from engine.turns.api import SessionKey, Speaker, UserLine  # noqa: E402
from engine.turns.profiles import environment_profile  # noqa: E402
from engine.turns.service import TavernService  # noqa: E402

HISTORY = 200
TURNS = 60
TARGET = 1.1
CPU = "--cpu" in sys.argv[1:]
CLOCK = time.process_time if CPU else time.perf_counter
ANN = Speaker(id="u1", name="Ann")
ON = SessionKey(platform="console", realm="local", key="memory-on")
OFF = SessionKey(platform="console", realm="local", key="memory-off")


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
        for key in (ON, OFF):
            await service.open_session(key)
        await service.set_session_option(OFF, "memory", "off")
        for i in range(HISTORY):
            for key in (ON, OFF):
                await service.respond(key, "main", _line(i))
            await service.drain()
        records = len(await service.memories(ON, "main", limit=200))
        times: dict[SessionKey, list[float]] = {ON: [], OFF: []}
        for i in range(TURNS):
            order = (ON, OFF) if i % 2 == 0 else (OFF, ON)
            for key in order:
                start = CLOCK()
                await service.respond(key, "main", _line(HISTORY + i))
                times[key].append(CLOCK() - start)
                await service.drain()  # memory's after-commit work, outside the timed call
        await service.aclose()
        await storage.close()
    on, off = (statistics.median(times[k]) * 1000 for k in (ON, OFF))
    ratio = on / off
    print(
        f"{HISTORY} turns of history each; memory records the memory-on session lists: {records}"
    )
    if CPU:
        print("times are the process's CPU time per call, not wall time")
    print(f"respond, memory on:  {on:.2f} ms (median of {TURNS})")
    print(f"respond, memory off: {off:.2f} ms (median of {TURNS})")
    print(f"memory on / off: {ratio:.2f}x (target <= {TARGET}x)")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
