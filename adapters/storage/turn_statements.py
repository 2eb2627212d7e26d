"""Statements a turn runs every time, built once (building a statement and its cache key
costs more than running it on a small table); the repositories bind their parameters."""

from __future__ import annotations

import functools
from typing import Any, Final

from sqlalchemy import (
    ColumnClause,
    Select,
    Update,
    and_,
    bindparam,
    case,
    exists,
    func,
    insert,
    literal,
    literal_column,
    null,
    or_,
    select,
    union_all,
    update,
)

from adapters.storage.itemization_models import ITEMIZATION
from adapters.storage.tables import ASSET, BRANCH, FLOOR, LOG, MESSAGE, PAGE, SESSION, VALUE

STATEMENT_CACHE_SIZE: Final = 64
"""Statements kept per shape (a count of pairs, a set of updated columns) by the builders
below; a shape past them is built again when next used."""

SESSION_WITH_BRANCHES = (
    select(
        *(c.label(f"s_{c.name}") for c in SESSION.c),
        *(c.label(f"b_{c.name}") for c in BRANCH.c),
    )
    .select_from(SESSION.outerjoin(BRANCH, BRANCH.c.session_id == SESSION.c.id))
    .where(SESSION.c.id == bindparam("session_id"))
    .order_by(BRANCH.c.id)
)
_ANY_STATE = FLOOR.alias("any_state")
_EMPTY: ColumnClause[str] = literal_column("''")
_FAILED: ColumnClause[str] = literal_column("'failed'")
LATEST_FOR_OPEN = (
    select(
        FLOOR,
        # ``status || ''`` keeps SQLite's planner off the status index (with every
        # session's pending page in it, it scanned them all); the floor's pages are found
        # by floor id.
        exists()
        .where(PAGE.c.floor_id == FLOOR.c.id, PAGE.c.status.concat(_EMPTY) == "pending")
        .label("has_pending"),
        exists()
        .where(
            LOG.c.branch_id == FLOOR.c.branch_id,
            LOG.c.scope == "floor",
            LOG.c.seq == FLOOR.c.seq + 1,
            LOG.c.source == "explicit",
        )
        .label("has_writes"),
        # The new floor's number goes after the newest floor of any state (a failed one
        # keeps its number): read here rather than in a statement of its own.
        select(func.max(_ANY_STATE.c.seq))
        .where(_ANY_STATE.c.branch_id == bindparam("branch_id"))
        .scalar_subquery()
        .label("newest_seq"),
    )
    # 'failed' written in the SQL: SQLite then reads the newest live floor from the partial
    # index of live floors (branch, seq) instead of sorting every floor of the branch.
    .where(FLOOR.c.branch_id == bindparam("branch_id"), FLOOR.c.state != _FAILED)
    .order_by(FLOOR.c.seq.desc())
    .limit(1)
)
NEWEST_SEQ = select(func.max(FLOOR.c.seq)).where(FLOOR.c.branch_id == bindparam("branch_id"))
BRANCH_FOR_UPDATE = (
    select(BRANCH.c.id).where(BRANCH.c.id == bindparam("branch_id")).with_for_update()
)
SESSION_BY_ID = select(SESSION).where(SESSION.c.id == bindparam("session_id"))
ASSET_BY_NAME = select(ASSET).where(
    ASSET.c.realm_id == bindparam("realm_id"),
    ASSET.c.kind == bindparam("kind"),
    ASSET.c.name == bindparam("name"),
)
INSERT_FLOOR = insert(FLOOR).returning(*FLOOR.c)
INSERT_PAGE = insert(PAGE).returning(*PAGE.c)
INSERT_MESSAGES = insert(MESSAGE)
INSERT_ITEMIZATION = insert(ITEMIZATION)


def window_bucket(count: int) -> int:
    """The number of floor ids :func:`message_window` takes for ``count`` ids: the next power
    of two (the last id repeats up to it), so a growing chat reuses a few shapes."""
    return 1 << max(count - 1, 0).bit_length()


@functools.lru_cache(maxsize=STATEMENT_CACHE_SIZE)
def message_window(ids: int) -> Select[Any]:
    """The messages of ``ids`` floors (parameters ``i<n>``; see :func:`window_bucket`), in
    the order the history window reads them."""
    wanted = [bindparam(f"i{n}", type_=MESSAGE.c.floor_id.type) for n in range(ids)]
    return (
        select(
            MESSAGE.c.floor_id,
            MESSAGE.c.page_id,
            MESSAGE.c.role,
            MESSAGE.c.speaker_name,
            MESSAGE.c.raw,
            MESSAGE.c.hidden,
            MESSAGE.c.speaker_id,
        )
        .where(MESSAGE.c.floor_id.in_(wanted))
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


@functools.lru_cache(maxsize=STATEMENT_CACHE_SIZE)
def assets_named(pairs: int) -> Select[Any]:
    """A realm's assets by ``pairs`` (kind, name) pairs: parameters ``realm_id``, ``k<n>``
    and ``n<n>``."""
    wanted = or_(
        *(
            and_(ASSET.c.kind == bindparam(f"k{n}"), ASSET.c.name == bindparam(f"n{n}"))
            for n in range(pairs)
        )
    )
    return select(ASSET).where(ASSET.c.realm_id == bindparam("realm_id"), wanted)


@functools.lru_cache(maxsize=STATEMENT_CACHE_SIZE)
def values_of_owners(owners: int) -> Select[Any]:
    """The stored variables of ``owners`` scopes: parameters ``s<n>`` and ``o<n>``."""
    wanted = or_(
        *(
            and_(VALUE.c.scope == bindparam(f"s{n}"), VALUE.c.owner_id == bindparam(f"o{n}"))
            for n in range(owners)
        )
    )
    return select(VALUE.c.scope, VALUE.c.owner_id, VALUE.c.key, VALUE.c.value).where(wanted)


@functools.lru_cache(maxsize=STATEMENT_CACHE_SIZE)
def floor_compare_and_set(columns: tuple[str, ...]) -> Update:
    """``UPDATE floor SET <columns> WHERE id = :w_id AND state = :w_expected``; each column
    is set from the parameter ``v_<column>``."""
    return (
        update(FLOOR)
        .where(FLOOR.c.id == bindparam("w_id"), FLOOR.c.state == bindparam("w_expected"))
        .values({c: bindparam(f"v_{c}", type_=FLOOR.c[c].type) for c in columns})
    )


@functools.lru_cache(maxsize=STATEMENT_CACHE_SIZE)
def page_compare_and_set(columns: tuple[str, ...]) -> Update:
    """``UPDATE page SET <columns> WHERE id = :w_id AND status = :w_expected``; each column
    is set from the parameter ``v_<column>``."""
    return (
        update(PAGE)
        .where(PAGE.c.id == bindparam("w_id"), PAGE.c.status == bindparam("w_expected"))
        .values({c: bindparam(f"v_{c}", type_=PAGE.c[c].type) for c in columns})
    )
