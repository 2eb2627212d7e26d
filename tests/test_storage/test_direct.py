"""The turn's prebuilt statements on the driver connection (adapters/storage/direct.py): the
rows, types and defaults SQLAlchemy's own execution gave, the storable-text edge, the errors
the unit of work sorts, and the bounded plan cache."""

from __future__ import annotations

from datetime import datetime

import pytest
from sqlalchemy import event, select

from adapters.storage import SqlStorage
from adapters.storage.direct import PLAN_CACHE_SIZE, DirectRunner, plan_of
from adapters.storage.tables import FLOOR, PAGE
from adapters.storage.text_edge import REPLACEMENT
from adapters.storage.turn_statements import INSERT_FLOOR, INSERT_PAGE, window_bucket
from engine.errors import ConflictError
from tests.test_storage.support import World


async def test_direct_rows_match_sqlalchemy_rows(storage: SqlStorage) -> None:
    opened = await World(storage).session()
    async with storage.unit_of_work() as uow:
        run = DirectRunner(uow.connection)
        values = {"branch_id": opened.main.id, "seq": 1, "state": "generating"}
        floor = (await run.execute(INSERT_FLOOR, values)).one()
        # Column defaults were filled in (hidden, created_at, updated_at) and typed back.
        assert floor.hidden is False and isinstance(floor.created_at, datetime)
        meta = {"nul": "a\x00b", "list": [1, 2]}
        page_values = {"floor_id": floor.id, "number": 1, "status": "pending", "meta": meta}
        page = (await run.execute(INSERT_PAGE, page_values)).one()
        assert page.meta == {"nul": f"a{REPLACEMENT}b", "list": [1, 2]}
        ours = (await run.execute(select(FLOOR).where(FLOOR.c.id == floor.id))).one()
        theirs = (await uow.connection.execute(select(FLOOR).where(FLOOR.c.id == floor.id))).one()
        assert tuple(ours) == tuple(theirs)
        stored = (await uow.connection.execute(select(PAGE.c.meta))).scalar()
        assert stored == page.meta


async def test_direct_statements_pass_the_engine_listeners(storage: SqlStorage) -> None:
    seen: list[str] = []

    def count(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        seen.append(statement)

    opened = await World(storage).session()
    target = storage.engine.sync_engine
    event.listen(target, "before_cursor_execute", count)
    try:
        async with storage.read() as uow:
            await uow.sessions.get(opened.session.id)
    finally:
        event.remove(target, "before_cursor_execute", count)
    # SQLite's BEGIN passes the listeners too; asyncpg begins without a statement.
    assert [s for s in seen if not s.startswith("BEGIN")] == [seen[-1]]
    assert seen[-1].startswith("SELECT session.id")


async def test_a_duplicate_row_is_a_conflict(storage: SqlStorage) -> None:
    opened = await World(storage).session()
    values = {"branch_id": opened.main.id, "seq": 1, "state": "generating"}
    async with storage.unit_of_work() as uow:
        floor = (await DirectRunner(uow.connection).execute(INSERT_FLOOR, values)).one()
    with pytest.raises(ConflictError, match="duplicate or dangling"):
        async with storage.unit_of_work() as uow:
            # A page of a floor that does not exist: the foreign key refuses it.
            page = {"floor_id": floor.id + 1000, "number": 1, "status": "pending", "meta": {}}
            await DirectRunner(uow.connection).execute(INSERT_PAGE, page)


def test_window_buckets_are_powers_of_two() -> None:
    assert [window_bucket(n) for n in (1, 2, 3, 4, 5, 9, 16, 17)] == [1, 2, 4, 4, 8, 16, 16, 32]


async def test_plans_are_kept_up_to_the_limit(storage: SqlStorage) -> None:
    plan_of.cache_clear()
    dialect = storage.engine.dialect
    for n in range(PLAN_CACHE_SIZE + 10):
        plan_of(select(FLOOR.c.id).where(FLOOR.c.seq == n), dialect, ())
    assert plan_of.cache_info().currsize == PLAN_CACHE_SIZE
    stmt = select(FLOOR.c.id)
    assert plan_of(stmt, dialect, ()) is plan_of(stmt, dialect, ())
