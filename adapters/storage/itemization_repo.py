"""Page itemizations in SQL (see :mod:`adapters.storage.itemization_models`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.storage.direct import DirectRunner
from adapters.storage.itemization_models import ITEMIZATION
from adapters.storage.turn_statements import INSERT_ITEMIZATION


class SqlItemizations:
    """The :class:`engine.ports.ItemizationRepository` of one unit of work."""

    def __init__(self, connection: AsyncConnection, direct: DirectRunner | None = None) -> None:
        self._conn = connection
        self._run = direct if direct is not None else DirectRunner(connection)

    async def add(self, page_id: int, data: Mapping[str, Any]) -> None:
        """Store a page's itemization: one INSERT (it rides on the page's commit)."""
        await self._run.execute(INSERT_ITEMIZATION, {"page_id": page_id, "data": dict(data)})

    async def of_page(self, page_id: int) -> dict[str, Any] | None:
        """The itemization of a page, or None (an older page, or none was kept)."""
        found = await self._conn.execute(
            select(ITEMIZATION.c.data).where(ITEMIZATION.c.page_id == page_id)
        )
        data = found.scalar_one_or_none()
        return None if data is None else dict(data)
