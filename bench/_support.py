"""What several bench scripts share: bulk-building a long branch with plain inserts.

A benchmark that compares a 10-floor branch with a 10,000-floor one cannot commit 10,000 turns
through the engine in reasonable time, so it inserts the rows those commits would leave.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import insert

from adapters.storage.models import FloorRow, PageRow


async def insert_committed_floors(
    db: Any, branch_id: int, n: int, now: datetime
) -> tuple[list[int], list[int]]:
    """Floors 1..n on the branch, each committed with one committed page (number 1, active).

    Returns the ids of the floors and of their pages, both in floor order, for the rows the
    caller adds on top (messages, variable writes).
    """
    floor_rows = [
        {
            "branch_id": branch_id,
            "seq": seq,
            "state": "committed",
            "active_page": 1,
            "hidden": False,
            "created_at": now,
            "updated_at": now,
        }
        for seq in range(1, n + 1)
    ]
    floor_ids = [
        row.id
        for row in await db.execute(
            insert(FloorRow.__table__).returning(FloorRow.id, sort_by_parameter_order=True),
            floor_rows,
        )
    ]
    page_rows = [
        {
            "floor_id": fid,
            "number": 1,
            "status": "committed",
            "hidden": False,
            "meta": {},
            "created_at": now,
        }
        for fid in floor_ids
    ]
    page_ids = [
        row.id
        for row in await db.execute(
            insert(PageRow.__table__).returning(PageRow.id, sort_by_parameter_order=True),
            page_rows,
        )
    ]
    return floor_ids, page_ids
