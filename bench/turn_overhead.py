"""Benchmark: the engine's own cost of a turn (offline model, no delay).

1. Overhead vs plain INSERTs: ``TavernService.respond`` (input on a new floor, page, prompt
   assembly with macros, the offline model streaming, commit) against inserting the rows a
   turn leaves (floor, page, the two messages) with plain ``INSERT`` statements in one
   transaction on the same SQLite driver. Target: median at most 3x.
2. Flat with history length: the same respond on a session with 10 floors and on one with
   10,000 floors (bulk-built with plain inserts, as commits would leave them). Target: the
   10,000-floor turn costs at most 1.5x the 10-floor turn.

Runs alternate; medians are compared. Run from the repository root:
``python bench/turn_overhead.py``
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import event, insert, text  # noqa: E402

from adapters.llm import OfflineChatModel  # noqa: E402
from adapters.storage import open_storage  # noqa: E402
from adapters.storage.models import MessageRow, utcnow  # noqa: E402
from bench._support import insert_committed_floors  # noqa: E402
from engine.turns.api import SessionKey, Speaker, UserLine  # noqa: E402
from engine.turns.profiles import environment_profile  # noqa: E402
from engine.turns.service import TavernService  # noqa: E402

TURNS = 100
WARMUP = 10
SMALL, LARGE = 10, 10_000
OVERHEAD_TARGET = 3.0
FLAT_TARGET = 1.5
ANN = Speaker(id="u1", name="Ann")
REPLY = "*The door creaks open.* " * 8


async def _bulk(storage: Any, branch_id: int, n: int) -> None:
    """Floors 1..n with one input and one committed reply each."""
    now = utcnow()
    async with storage.unit_of_work() as uow:
        db = uow.db
        ids, page_ids = await insert_committed_floors(db, branch_id, n, now)
        messages: list[dict[str, Any]] = []
        for f, p in zip(ids, page_ids, strict=True):
            for page_id, role, raw in ((None, "user", "I look around."), (p, "assistant", REPLY)):
                messages.append(
                    {
                        "floor_id": f,
                        "page_id": page_id,
                        "seq": 1,
                        "role": role,
                        "speaker_name": "Ann" if role == "user" else "Narrator",
                        "raw": raw,
                        "display": raw,
                        "hidden": False,
                        "created_at": now,
                    }
                )
        for start in range(0, len(messages), 10_000):
            await db.execute(insert(MessageRow.__table__), messages[start : start + 10_000])


async def _plain(storage: Any, branch_id: int, seq: int) -> None:
    now = utcnow().isoformat(sep=" ")
    async with storage.unit_of_work() as uow:
        db = uow.db
        floor = (
            await db.execute(
                text(
                    "INSERT INTO floor (branch_id, seq, state, active_page, hidden, created_at,"
                    " updated_at) VALUES (:b, :s, 'committed', 1, 0, :t, :t) RETURNING id"
                ),
                {"b": branch_id, "s": seq, "t": now},
            )
        ).scalar_one()
        page = (
            await db.execute(
                text(
                    "INSERT INTO page (floor_id, number, status, hidden, meta, created_at)"
                    " VALUES (:f, 1, 'committed', 0, '{}', :t) RETURNING id"
                ),
                {"f": floor, "t": now},
            )
        ).scalar_one()
        await db.execute(
            text(
                "INSERT INTO message (floor_id, page_id, seq, role, speaker_name, raw, display,"
                " hidden, created_at) VALUES (:f, :p, 1, :r, :n, :x, :x, 0, :t)"
            ),
            [
                {"f": floor, "p": None, "r": "user", "n": "Ann", "x": "hello", "t": now},
                {"f": floor, "p": page, "r": "assistant", "n": "N", "x": REPLY, "t": now},
            ],
        )


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        storage = await open_storage(f"sqlite+aiosqlite:///{tmp}/bench.db")
        model = OfflineChatModel(announce=False)
        service = TavernService(
            storage,
            model_for=lambda p: model,
            default_profile=environment_profile(provider="offline", base_url=None, model="x"),
        )
        keys = {
            n: SessionKey(platform="console", realm="local", key=f"s{n}") for n in (SMALL, LARGE)
        }
        for n, key in keys.items():
            await service.open_session(key)
            branch = await service.parts.sessions.branch(
                (await service.parts.sessions.ids(key)).session_id, "main"
            )
            await _bulk(storage, branch.id, n)
        plain_key = SessionKey(platform="console", realm="local", key="plain")
        await service.open_session(plain_key)
        plain_branch = await service.parts.sessions.branch(
            (await service.parts.sessions.ids(plain_key)).session_id, "main"
        )
        times: dict[str, list[float]] = {"plain": [], "small": [], "large": []}
        for i in range(WARMUP + TURNS):
            line = [UserLine(speaker=ANN, text=f"I open door {i}.")]
            runs = (
                ("plain", _plain(storage, plain_branch.id, i + 1)),
                ("small", service.respond(keys[SMALL], "main", line)),
                ("large", service.respond(keys[LARGE], "main", line)),
            )
            for name, call in runs:
                start = time.perf_counter()
                await call
                took = time.perf_counter() - start
                if i >= WARMUP:
                    times[name].append(took)
        # Statements of one more turn and one more plain insert (after the timed runs, so
        # counting costs them nothing).
        counts = {"plain": 0, "small": 0}

        def count(*_args: Any) -> None:
            counts[current] += 1

        event.listen(storage.engine.sync_engine, "before_cursor_execute", count)
        current = "plain"
        await _plain(storage, plain_branch.id, WARMUP + TURNS + 1)
        current = "small"
        await service.respond(keys[SMALL], "main", [UserLine(speaker=ANN, text="one more")])
        event.remove(storage.engine.sync_engine, "before_cursor_execute", count)
        await storage.close()
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    overhead = med["small"] / med["plain"]
    flat = med["large"] / med["small"]
    print(f"plain INSERTs of a turn's rows: {med['plain']:.2f} ms (median of {TURNS})")
    print(f"respond, {SMALL} floors before:     {med['small']:.2f} ms")
    print(f"respond, {LARGE} floors before:  {med['large']:.2f} ms")
    print(f"SQL statements (BEGIN included): plain {counts['plain']}, respond {counts['small']}")
    print(f"overhead vs plain INSERTs: {overhead:.2f}x (target <= {OVERHEAD_TARGET}x)")
    print(f"{LARGE} vs {SMALL} floors:      {flat:.2f}x (target <= {FLAT_TARGET}x)")
    ok = overhead <= OVERHEAD_TARGET and flat <= FLAT_TARGET
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
