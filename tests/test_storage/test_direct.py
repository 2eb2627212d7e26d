"""The turn's storage path below SQLAlchemy's execution layer: prebuilt statements on the
driver connection (adapters/storage/direct.py) give the rows, types and defaults SQLAlchemy's
own execution gave, pass the storable-text edge and raise the errors the unit of work sorts;
the plan cache is bounded; the JSON edge's fast path; the newest-floor read's indexes; and a
cancelled unit of work (two hand-offs into SQLAlchemy instead of engine.begin()) still gives
its connection back."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy import event, select

from adapters.storage import SqlStorage
from adapters.storage.direct import PLAN_CACHE_SIZE, DirectRunner, plan_of
from adapters.storage.tables import FLOOR, PAGE
from adapters.storage.text_edge import (
    REPLACEMENT,
    storable_json,
    storable_parameters,
    storable_value,
)
from adapters.storage.turn_statements import (
    INSERT_FLOOR,
    INSERT_PAGE,
    LATEST_FOR_OPEN,
    window_bucket,
)
from engine.errors import ConflictError
from tests.test_storage.support import World, open_test_storage


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


def test_storable_json_finds_refused_text_in_its_output() -> None:
    cases = [
        {"a": "plain", "b": ["é", 1, None]},
        {"nul\x00key": "x", "lone": "\ud800"},
        ["a backslash and u0000: \\u0000", "\udfff"],
        {"nested": [{"deep": "a\x00"}]},
    ]
    for value in cases:
        assert storable_json(value) == json.dumps(storable_value(value))
    assert "\\u0000" not in storable_json({"k": "a\x00"})


async def test_the_newest_floor_read_uses_the_live_floor_and_floor_id_indexes(
    tmp_path: Path,
) -> None:
    # The pending-page check once searched the status index, so every session's pending
    # page was scanned; the newest live floor was sorted out of all the branch's floors.
    async with open_test_storage("sqlite", tmp_path=tmp_path) as storage:
        plan = plan_of(LATEST_FOR_OPEN, storage.engine.dialect, ())
        async with storage.read() as uow:
            driver = await uow.connection.get_raw_connection()
            raw = driver.driver_connection.raw  # type: ignore[union-attr]
            steps = [row[3] for row in raw.execute(f"EXPLAIN QUERY PLAN {plan.sql}", [1] * 8)]
    assert any("uq_floor_live_seq" in step for step in steps), steps
    assert not any("TEMP B-TREE" in step or "ix_page_status" in step for step in steps), steps


async def test_a_cancelled_unit_of_work_gives_its_connection_back(storage: SqlStorage) -> None:
    opened = await World(storage).session()
    entered = asyncio.Event()

    async def stuck() -> None:
        async with storage.unit_of_work() as uow:
            await uow.sessions.get(opened.session.id)
            entered.set()
            await asyncio.sleep(60)

    task = asyncio.create_task(stuck())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pool = storage.engine.sync_engine.pool
    assert pool.checkedout() == 0  # type: ignore[attr-defined]
    async with storage.unit_of_work() as uow:  # and the storage goes on
        assert (await uow.sessions.get(opened.session.id)).id == opened.session.id


def test_clean_positional_parameters_pass_as_they_are() -> None:
    clean = (1, "text", None, 2.5, b"x")
    assert storable_parameters(clean) is clean
    cleaned = storable_parameters((1, "a\x00", ["b\ud800"]))
    assert cleaned == (1, f"a{REPLACEMENT}", [f"b{REPLACEMENT}"])
