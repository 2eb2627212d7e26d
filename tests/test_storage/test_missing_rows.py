"""A row looked up by id that is gone says so without its row id: users know floors and pages
by number and branches by name, and a row id reads like one of those ("floor 12")."""

from __future__ import annotations

import pytest

from adapters.storage import SqlStorage
from engine.errors import NotFoundError

MISSING = 987_654


async def test_a_missing_row_is_named_without_its_id(storage: SqlStorage) -> None:
    async with storage.read() as uow:
        lookups = {
            "realm": uow.realms.get,
            "session": uow.sessions.get,
            "branch": uow.branches.get,
            "floor": uow.floors.get,
            "page": uow.pages.get,
        }
        for what, get in lookups.items():
            with pytest.raises(NotFoundError) as caught:
                await get(MISSING)
            assert str(caught.value) == f"that {what} no longer exists"
        with pytest.raises(NotFoundError, match=r"^that page no longer exists$"):
            await uow.pages.context(MISSING)
