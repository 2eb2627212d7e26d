"""Benchmark: committing a turn vs inserting the same rows with plain INSERTs.

A turn here is ``TimelineService.commit_page`` of a page with two messages and 20 staged
variable writes (one transaction: compare-and-set of page and floor, messages, log rows,
materialised values, periodic snapshot). The baseline inserts the same rows (one page, two
messages, 20 log rows) with plain ``INSERT`` statements in one transaction on the same SQLite
driver. Preparing each floor (open, generating, add page) is outside the timing. Runs
alternate; medians are compared. Target: at most 3x.

Run from the repository root: ``python bench/timeline_commit.py``
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import text  # noqa: E402

from adapters.storage import open_storage  # noqa: E402
from adapters.storage.models import utcnow  # noqa: E402
from engine.timeline.service import TimelineService  # noqa: E402
from engine.timeline.values import NewMessage  # noqa: E402
from engine.variables.values import Mutation  # noqa: E402

TURNS = 300
WARMUP = 20
TARGET = 3.0
MESSAGES = [
    NewMessage(role="user", raw="I open the door.", speaker_id="u1", speaker_name="Ann"),
    NewMessage(role="assistant", raw="*The door creaks open.* " * 20, speaker_name="Narrator"),
]


def _writes(n: int) -> list[Mutation]:
    return [Mutation.set("branch", f"k{i}", {"turn": n, "i": i}) for i in range(20)]


async def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        storage = await open_storage(f"sqlite+aiosqlite:///{tmp}/bench.db")
        timeline = TimelineService(storage)
        opened = await timeline.open_session("console", "local", "bench")
        branch = opened.main.id
        ours: list[float] = []
        plain: list[float] = []
        for n in range(WARMUP + TURNS):
            floor = await timeline.open_floor(branch)
            await timeline.start_generating(floor.id)
            page = await timeline.add_page(floor.id)
            start = time.perf_counter()
            await timeline.commit_page(page.id, messages=MESSAGES, writes=_writes(n))
            took = time.perf_counter() - start
            baseline = await _plain_inserts(storage, opened, floor.id, n)
            if n >= WARMUP:
                ours.append(took)
                plain.append(baseline)
        await storage.close()
    ours_ms, plain_ms = statistics.median(ours) * 1000, statistics.median(plain) * 1000
    ratio = ours_ms / plain_ms
    print(f"commit_page (2 messages, 20 writes): {ours_ms:.3f} ms (median of {TURNS})")
    print(f"plain INSERTs of the same rows:      {plain_ms:.3f} ms")
    print(f"ratio: {ratio:.2f}x (target <= {TARGET}x)")
    return 0 if ratio <= TARGET else 1


async def _plain_inserts(storage, opened, floor_id: int, n: int) -> float:  # type: ignore[no-untyped-def]
    """The same rows with plain INSERTs in one transaction (rows go to a throwaway page)."""
    now = utcnow()
    async with storage.engine.connect() as conn:
        start = time.perf_counter()
        await conn.begin()
        page_id = (
            await conn.execute(
                text(
                    "INSERT INTO page (floor_id, number, status, hidden, meta, created_at) "
                    "VALUES (:f, :n, 'committed', 0, '{}', :t) RETURNING id"
                ),
                {"f": floor_id, "n": 1000 + n, "t": now},
            )
        ).scalar_one()
        await conn.execute(
            text(
                "INSERT INTO message (floor_id, page_id, seq, role, speaker_id, speaker_name, "
                "raw, display, hidden, platform_ref, created_at) "
                "VALUES (:f, :p, :s, :r, :si, :sn, :raw, :raw, 0, NULL, :t)"
            ),
            [
                {
                    "f": floor_id,
                    "p": page_id,
                    "s": i,
                    "r": m.role,
                    "si": m.speaker_id,
                    "sn": m.speaker_name,
                    "raw": m.raw,
                    "t": now,
                }
                for i, m in enumerate(MESSAGES, start=1)
            ],
        )
        await conn.execute(
            text(
                "INSERT INTO variable_log (source, scope, key, op, value, realm_id, session_id, "
                "branch_id, seq, floor_id, page_id, created_at) "
                "VALUES ('page', 'branch', :k, 'set', :v, :realm, :session, :branch, :seq, "
                ":f, :p, :t)"
            ),
            [
                {
                    "k": w.key,
                    "v": json.dumps(w.value),
                    "realm": opened.realm.id,
                    "session": opened.session.id,
                    "branch": opened.main.id,
                    "seq": n,
                    "f": floor_id,
                    "p": page_id,
                    "t": now,
                }
                for w in _writes(n)
            ],
        )
        await conn.commit()
        return time.perf_counter() - start


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
