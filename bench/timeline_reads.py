"""Benchmark: reading a branch's variable state after 10,000 committed floors vs after 10.

Both branches get 20 variable writes per floor over the same 50 keys, so their states have the
same size; the 10,000-floor branch is bulk-built with plain inserts (floors, pages, log rows,
materialised head and periodic snapshots exactly as commits would leave them) and checked
against a replay before timing. Reads alternate between the two branches; the medians are
compared. Target: the 10,000-floor read costs at most 2x the 10-floor read.

Run from the repository root: ``python bench/timeline_reads.py``
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

from sqlalchemy import insert  # noqa: E402

from adapters.storage import open_storage  # noqa: E402
from adapters.storage.models import (  # noqa: E402
    VariableLogRow,
    VariableSnapshotRow,
    VariableValueRow,
    utcnow,
)
from bench._support import insert_committed_floors  # noqa: E402
from engine.timeline.service import TimelineService  # noqa: E402
from engine.variables.service import VariableService  # noqa: E402
from engine.variables.store import SNAPSHOT_EVERY  # noqa: E402

WRITES_PER_FLOOR = 20
KEYS = 50
SMALL, LARGE = 10, 10_000
READS = 300
TARGET = 2.0


def _writes(seq: int) -> list[tuple[str, int]]:
    return [(f"k{(seq * WRITES_PER_FLOOR + i) % KEYS}", seq * 100 + i) for i in range(20)]


async def _bulk_build(
    storage: Any, realm_id: int, session_id: int, branch_id: int, n: int
) -> None:
    """Floors 1..n on the branch, as if each had committed one page with 20 writes."""
    now = utcnow()
    state: dict[str, Any] = {}
    async with storage.unit_of_work() as uow:
        db = uow.db
        floor_ids, page_ids = await insert_committed_floors(db, branch_id, n, now)
        log_rows: list[dict[str, Any]] = []
        snapshots: list[dict[str, Any]] = []
        for seq, (fid, pid) in enumerate(zip(floor_ids, page_ids, strict=True), start=1):
            for key, value in _writes(seq):
                state[key] = value
                log_rows.append(
                    {
                        "source": "page",
                        "scope": "branch",
                        "key": key,
                        "op": "set",
                        "value": value,
                        "realm_id": realm_id,
                        "session_id": session_id,
                        "branch_id": branch_id,
                        "seq": seq,
                        "floor_id": fid,
                        "page_id": pid,
                        "created_at": now,
                    }
                )
            if seq % SNAPSHOT_EVERY == 0:
                snapshots.append({"page_id": pid, "data": dict(state)})
        for start in range(0, len(log_rows), 20_000):
            await db.execute(insert(VariableLogRow.__table__), log_rows[start : start + 20_000])
        if snapshots:
            await db.execute(insert(VariableSnapshotRow.__table__), snapshots)
        await db.execute(
            insert(VariableValueRow.__table__),
            [
                {"scope": "branch", "owner_id": branch_id, "key": k, "value": v}
                for k, v in state.items()
            ],
        )


def _replay(n: int) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for seq in range(1, n + 1):
        state.update(_writes(seq))
    return state


async def _time(fn: Any) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        storage = await open_storage(f"sqlite+aiosqlite:///{tmp}/bench.db")
        timeline, variables = TimelineService(storage), VariableService(storage)
        branches = {}
        build_start = time.perf_counter()
        for n in (SMALL, LARGE):
            opened = await timeline.open_session("console", "local", f"floors-{n}")
            await _bulk_build(storage, opened.realm.id, opened.session.id, opened.main.id, n)
            branches[n] = opened.main.id
        build_s = time.perf_counter() - build_start
        for n, branch in branches.items():  # the bulk build is what commits would leave
            assert (await variables.state(branch)).branch == _replay(n)
            assert await timeline.head(branch) == n
            assert (await variables.state(branch, floor=n - 3)).branch == _replay(n - 3)
        head = {SMALL: [], LARGE: []}
        past = {SMALL: [], LARGE: []}
        for _ in range(READS):
            for n, branch in branches.items():
                head[n].append(await _time(lambda b=branch: variables.state(b)))
                past[n].append(await _time(lambda b=branch, n=n: variables.state(b, floor=n - 3)))
        await storage.close()
    med = {
        k: {n: statistics.median(v[n]) * 1000 for n in v}
        for k, v in (("head", head), ("past", past))
    }
    ratio = med["head"][LARGE] / med["head"][SMALL]
    past_ratio = med["past"][LARGE] / med["past"][SMALL]
    print(f"bulk build of {SMALL} + {LARGE} floors: {build_s:.1f}s")
    print(f"current state, {SMALL} floors:     {med['head'][SMALL]:.3f} ms (median of {READS})")
    print(f"current state, {LARGE} floors:  {med['head'][LARGE]:.3f} ms")
    print(f"ratio: {ratio:.2f}x (target <= {TARGET}x)")
    print(f"state at floor n-3, {SMALL} floors:    {med['past'][SMALL]:.3f} ms")
    print(f"state at floor n-3, {LARGE} floors: {med['past'][LARGE]:.3f} ms")
    print(f"ratio (past floor): {past_ratio:.2f}x")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
