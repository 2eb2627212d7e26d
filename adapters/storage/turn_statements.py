"""Statements a turn runs every time, built once (building a statement and its cache key
costs more than running it on a small table); the repositories bind their parameters."""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import (
    Select,
    and_,
    bindparam,
    case,
    exists,
    literal,
    null,
    or_,
    select,
    union_all,
)

from adapters.storage.tables import BRANCH, FLOOR, LOG, MESSAGE, PAGE, SESSION

SESSION_WITH_BRANCHES = (
    select(
        *(c.label(f"s_{c.name}") for c in SESSION.c),
        *(c.label(f"b_{c.name}") for c in BRANCH.c),
    )
    .select_from(SESSION.outerjoin(BRANCH, BRANCH.c.session_id == SESSION.c.id))
    .where(SESSION.c.id == bindparam("session_id"))
    .order_by(BRANCH.c.id)
)
LATEST_FOR_OPEN = (
    select(
        FLOOR,
        exists()
        .where(PAGE.c.floor_id == FLOOR.c.id, PAGE.c.status == "pending")
        .label("has_pending"),
        exists()
        .where(
            LOG.c.branch_id == FLOOR.c.branch_id,
            LOG.c.scope == "floor",
            LOG.c.seq == FLOOR.c.seq + 1,
            LOG.c.source == "explicit",
        )
        .label("has_writes"),
    )
    .where(FLOOR.c.branch_id == bindparam("branch_id"), FLOOR.c.state != "failed")
    .order_by(FLOOR.c.seq.desc())
    .limit(1)
)
MESSAGE_WINDOW = (
    select(
        MESSAGE.c.floor_id,
        MESSAGE.c.page_id,
        MESSAGE.c.role,
        MESSAGE.c.speaker_name,
        MESSAGE.c.raw,
        MESSAGE.c.hidden,
        MESSAGE.c.speaker_id,
    )
    .where(MESSAGE.c.floor_id.in_(bindparam("floor_ids", expanding=True)))
    .order_by(MESSAGE.c.floor_id, MESSAGE.c.page_id.nulls_first(), MESSAGE.c.seq)
)


@functools.cache
def window_statement(spans: int) -> Select[Any]:
    """The history-window read over ``spans`` lineage segments (parameters ``b<n>``,
    ``f<n>``, ``l<n>`` per span and ``meta_seq``); one statement per span count."""
    wanted = or_(
        *(
            and_(
                FLOOR.c.branch_id == bindparam(f"b{n}"),
                FLOOR.c.seq >= bindparam(f"f{n}"),
                FLOOR.c.seq <= bindparam(f"l{n}"),
            )
            for n in range(spans)
        )
    )
    # Only one page's meta is wanted: decoding every page's JSON would cost more than the
    # rest of the row.
    meta = case((FLOOR.c.seq == bindparam("meta_seq"), PAGE.c.meta), else_=null())
    # A failed floor's input stays in the chat: one row for it, without a page.
    failed = FLOOR.c.state == "failed"
    committed = select(
        FLOOR.c.id,
        FLOOR.c.branch_id,
        FLOOR.c.seq,
        FLOOR.c.hidden,
        FLOOR.c.active_page,
        PAGE.c.id.label("page_id"),
        PAGE.c.number,
        PAGE.c.hidden.label("page_hidden"),
        meta.label("meta"),
        literal(False).label("failed"),
    ).select_from(FLOOR.join(PAGE, PAGE.c.floor_id == FLOOR.c.id))
    lost = select(
        FLOOR.c.id,
        FLOOR.c.branch_id,
        FLOOR.c.seq,
        FLOOR.c.hidden,
        FLOOR.c.active_page,
        literal(0).label("page_id"),
        literal(0).label("number"),
        literal(False).label("page_hidden"),
        null().label("meta"),
        literal(True).label("failed"),
    )
    both = union_all(
        committed.where(FLOOR.c.state == "committed", wanted), lost.where(failed, wanted)
    ).subquery()
    return select(both).order_by(both.c.seq, both.c.id, both.c.number)
