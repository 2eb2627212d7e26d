"""The table of page itemizations: how each generated page's prompt was assembled (the
sections with their sources and token counts, the world-info entries that fired and the key
that fired each, the memory block, the budget), so the prompt inspector shows a past floor as
it was, not as today's cards and books would build it.

One row per page, written with the page's commit in the same transaction; pages older than the
table (or generated without a prompt) have none. This model joins
:class:`adapters.storage.models.Base` (``models`` imports this module at its end).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import ForeignKey, Integer, Table
from sqlalchemy.orm import Mapped, mapped_column

from adapters.storage.models import Base, utcnow


class PageItemizationRow(Base):
    """The itemization of one committed page (JSON, bounded by the engine's
    ``MAX_ITEMIZATION_CHARS``)."""

    __tablename__ = "page_itemization"

    page_id: Mapped[int] = mapped_column(Integer, ForeignKey("page.id"), primary_key=True)
    data: Mapped[dict[str, Any]] = mapped_column()
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


ITEMIZATION = cast(Table, PageItemizationRow.__table__)
"""The Core handle of the table (kept with its model, as the web token's is)."""
