"""Repositories of realms, sessions, branches, floors, pages, messages and links
(:mod:`adapters.storage.asset_repo` holds the assets').

Each works inside the unit of work's one ``AsyncSession`` and speaks Core statements, so every
call is one round trip. Compare-and-set is an ``UPDATE ... WHERE state = expected`` whose row
count says who won.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import (
    and_,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.storage import convert
from adapters.storage.direct import DirectRunner
from adapters.storage.models import (
    utcnow,
)
from adapters.storage.tables import BRANCH, FLOOR, LINK, MESSAGE, PAGE, REALM, SESSION
from adapters.storage.turn_statements import (
    BRANCH_FOR_UPDATE,
    INSERT_FLOOR,
    INSERT_MESSAGES,
    INSERT_PAGE,
    LATEST_FOR_OPEN,
    NEWEST_SEQ,
    SESSION_BY_ID,
    SESSION_WITH_BRANCHES,
    floor_compare_and_set,
    message_window,
    page_compare_and_set,
    window_bucket,
    window_statement,
)
from engine.errors import NotFoundError
from engine.ports import LatestFloor, WindowMessage, WindowPage
from engine.timeline.values import (
    Branch,
    Floor,
    FloorState,
    Message,
    NewMessage,
    Page,
    PageContext,
    PageStatus,
    PlatformLink,
    Realm,
    Session,
    SessionSettings,
)


def _gone(what: str) -> NotFoundError:
    """A row looked up by id is missing (removed since it was read): the message is shown to
    users, who know floors and pages by number and branches by name, never by row id."""
    return NotFoundError(f"that {what} no longer exists")


class _Repo:
    def __init__(self, db: AsyncConnection, direct: DirectRunner | None = None) -> None:
        self._db = db
        # The turn's prebuilt statements run below SQLAlchemy's execution layer.
        self._run = direct if direct is not None else DirectRunner(db)


class SqlRealms(_Repo):
    """Realms."""

    async def get(self, realm_id: int) -> Realm:
        row = (await self._db.execute(select(REALM).where(REALM.c.id == realm_id))).first()
        if row is None:
            raise _gone("realm")
        return convert.realm(row)

    async def find(self, platform: str, key: str) -> Realm | None:
        stmt = select(REALM).where(REALM.c.platform == platform, REALM.c.key == key)
        row = (await self._db.execute(stmt)).first()
        return None if row is None else convert.realm(row)

    async def add(self, platform: str, key: str) -> Realm:
        stmt = insert(REALM).values(platform=platform, key=key).returning(*REALM.c)
        return convert.realm((await self._db.execute(stmt)).one())


class SqlSessions(_Repo):
    """Sessions."""

    async def get(self, session_id: int) -> Session:
        row = (await self._run.execute(SESSION_BY_ID, {"session_id": session_id})).first()
        if row is None:
            raise _gone("session")
        return convert.session(row)

    async def find(self, platform: str, key: str) -> Session | None:
        stmt = select(SESSION).where(SESSION.c.platform == platform, SESSION.c.key == key)
        row = (await self._db.execute(stmt)).first()
        return None if row is None else convert.session(row)

    async def add(
        self, *, realm_id: int, platform: str, key: str, settings: SessionSettings
    ) -> Session:
        stmt = (
            insert(SESSION)
            .values(realm_id=realm_id, platform=platform, key=key, settings=settings.to_json())
            .returning(*SESSION.c)
        )
        return convert.session((await self._db.execute(stmt)).one())

    async def get_for_update(self, session_id: int) -> Session:
        stmt = select(SESSION).where(SESSION.c.id == session_id).with_for_update()
        row = (await self._db.execute(stmt)).first()
        if row is None:
            raise _gone("session")
        return convert.session(row)

    async def update_settings(self, session_id: int, settings: SessionSettings) -> None:
        stmt = (
            update(SESSION).where(SESSION.c.id == session_id).values(settings=settings.to_json())
        )
        await self._db.execute(stmt)

    async def get_with_branches(self, session_id: int) -> tuple[Session, builtins.list[Branch]]:
        params = {"session_id": session_id}
        rows = [row._asdict() for row in await self._run.execute(SESSION_WITH_BRANCHES, params)]
        if not rows:
            raise _gone("session")
        session = convert.session(_Sub(rows[0], "s_"))
        branches = [convert.branch(_Sub(data, "b_")) for data in rows if data["b_id"] is not None]
        return session, branches


class SqlBranches(_Repo):
    """Branches."""

    async def get(self, branch_id: int) -> Branch:
        row = (await self._db.execute(select(BRANCH).where(BRANCH.c.id == branch_id))).first()
        if row is None:
            raise _gone("branch")
        return convert.branch(row)

    async def find(self, session_id: int, name: str) -> Branch | None:
        stmt = select(BRANCH).where(BRANCH.c.session_id == session_id, BRANCH.c.name == name)
        row = (await self._db.execute(stmt)).first()
        return None if row is None else convert.branch(row)

    async def list(self, session_id: int) -> builtins.list[Branch]:
        stmt = select(BRANCH).where(BRANCH.c.session_id == session_id).order_by(BRANCH.c.id)
        return [convert.branch(row) for row in await self._db.execute(stmt)]

    async def add(
        self,
        *,
        session_id: int,
        name: str,
        parent_id: int | None,
        fork_floor: int | None,
        fork_page: int | None,
    ) -> Branch:
        stmt = (
            insert(BRANCH)
            .values(
                session_id=session_id,
                name=name,
                parent_id=parent_id,
                fork_floor=fork_floor,
                fork_page=fork_page,
            )
            .returning(*BRANCH.c)
        )
        return convert.branch((await self._db.execute(stmt)).one())

    async def rename(self, branch_id: int, name: str) -> None:
        await self._db.execute(update(BRANCH).where(BRANCH.c.id == branch_id).values(name=name))

    async def lock(self, branch_id: int) -> None:
        # SQLite's BEGIN IMMEDIATE already holds the database's one write lock.
        if self._db.dialect.name == "sqlite":
            return
        if (await self._run.execute(BRANCH_FOR_UPDATE, {"branch_id": branch_id})).first() is None:
            raise _gone("branch")


class SqlFloors(_Repo):
    """Floors."""

    async def add(
        self, *, branch_id: int, seq: int, owner: str | None = None, speaker: str | None = None
    ) -> Floor:
        now = utcnow()
        stmt = (
            insert(FLOOR)
            .values(
                branch_id=branch_id,
                seq=seq,
                state="draft",
                created_at=now,
                updated_at=now,
                owner=owner,
                speaker=speaker,
            )
            .returning(*FLOOR.c)
        )
        return convert.floor((await self._db.execute(stmt)).one())

    async def get(self, floor_id: int) -> Floor:
        row = (await self._db.execute(select(FLOOR).where(FLOOR.c.id == floor_id))).first()
        if row is None:
            raise _gone("floor")
        return convert.floor(row)

    async def latest(self, branch_id: int) -> Floor | None:
        stmt = (
            select(FLOOR)
            .where(FLOOR.c.branch_id == branch_id, FLOOR.c.state != "failed")
            .order_by(FLOOR.c.seq.desc())
            .limit(1)
        )
        row = (await self._db.execute(stmt)).first()
        return None if row is None else convert.floor(row)

    async def committed(self, branch_id: int, first: int, last: int | None) -> list[Floor]:
        stmt = select(FLOOR).where(
            FLOOR.c.branch_id == branch_id, FLOOR.c.state == "committed", FLOOR.c.seq >= first
        )
        if last is not None:
            stmt = stmt.where(FLOOR.c.seq <= last)
        stmt = stmt.order_by(FLOOR.c.seq)
        return [convert.floor(row) for row in await self._db.execute(stmt)]

    async def in_state(self, state: FloorState) -> list[Floor]:
        stmt = select(FLOOR).where(FLOOR.c.state == state).order_by(FLOOR.c.id)
        return [convert.floor(row) for row in await self._db.execute(stmt)]

    async def uncommitted_after(self, branch_id: int, seq: int) -> list[Floor]:
        stmt = (
            select(FLOOR)
            .where(
                FLOOR.c.branch_id == branch_id,
                FLOOR.c.seq > seq,
                FLOOR.c.state != "committed",
            )
            .order_by(FLOOR.c.seq, FLOOR.c.id)
        )
        return [convert.floor(row) for row in await self._db.execute(stmt)]

    async def newest(self, branch_id: int) -> Floor | None:
        stmt = (
            select(FLOOR)
            .where(FLOOR.c.branch_id == branch_id)
            .order_by(FLOOR.c.seq.desc(), FLOOR.c.id.desc())
            .limit(1)
        )
        row = (await self._db.execute(stmt)).first()
        return None if row is None else convert.floor(row)

    async def newest_committed(self, branch_id: int) -> int | None:
        stmt = select(func.max(FLOOR.c.seq)).where(
            FLOOR.c.branch_id == branch_id, FLOOR.c.state == "committed"
        )
        found = (await self._db.execute(stmt)).scalar()
        return None if found is None else int(found)

    async def failed(self, branch_id: int, first: int, last: int | None) -> list[Floor]:
        stmt = select(FLOOR).where(
            FLOOR.c.branch_id == branch_id, FLOOR.c.state == "failed", FLOOR.c.seq >= first
        )
        if last is not None:
            stmt = stmt.where(FLOOR.c.seq <= last)
        stmt = stmt.order_by(FLOOR.c.seq, FLOOR.c.id)
        return [convert.floor(row) for row in await self._db.execute(stmt)]

    async def latest_for_open(self, branch_id: int) -> LatestFloor:
        row = (await self._run.execute(LATEST_FOR_OPEN, {"branch_id": branch_id})).first()
        if row is None:  # no floor, or only failed ones: their newest still counts
            newest = (await self._run.execute(NEWEST_SEQ, {"branch_id": branch_id})).scalar()
            return LatestFloor(
                floor=None,
                pending=False,
                next_floor_writes=True,
                newest_seq=None if newest is None else int(newest),
            )
        return LatestFloor(
            floor=convert.floor(row),
            pending=bool(row.has_pending),
            next_floor_writes=bool(row.has_writes),
            newest_seq=int(row.newest_seq),
        )

    async def open_generating(
        self,
        *,
        branch_id: int,
        seq: int,
        inputs: Sequence[NewMessage],
        owner: str | None = None,
        speaker: str | None = None,
        seed: int | None = None,
    ) -> tuple[Floor, Page]:
        now = utcnow()
        floor_values = {
            "branch_id": branch_id,
            "seq": seq,
            "state": "generating",
            "created_at": now,
            "updated_at": now,
            "owner": owner,
            "speaker": speaker,
            "seed": seed,
        }
        floor = convert.floor((await self._run.execute(INSERT_FLOOR, floor_values)).one())
        page_values = {"floor_id": floor.id, "number": 1, "status": "pending", "meta": {}}
        page_values["owner"] = owner
        page = convert.page((await self._run.execute(INSERT_PAGE, page_values)).one())
        if inputs:
            await self._run.execute(INSERT_MESSAGES, message_rows(floor.id, None, 0, inputs))
        return floor, page

    async def window(
        self, spans: Sequence[tuple[int, int, int]], *, meta_seq: int | None = None
    ) -> list[WindowPage]:
        if not spans:
            return []
        params: dict[str, Any] = {"meta_seq": meta_seq if meta_seq is not None else -1}
        for n, (branch_id, first, last) in enumerate(spans):
            params.update({f"b{n}": branch_id, f"f{n}": first, f"l{n}": last})
        make = WindowPage._make
        return [make(row) for row in await self._run.execute(window_statement(len(spans)), params)]

    async def compare_and_set(
        self,
        floor_id: int,
        *,
        expected: FloorState,
        state: FloorState,
        error: str | None = None,
        active_page: int | None = None,
        owner: str | None = None,
    ) -> bool:
        values: dict[str, Any] = {"state": state, "updated_at": utcnow()}
        if error is not None:
            values["error"] = error
        if active_page is not None:
            values["active_page"] = active_page
        if owner is not None:
            values["owner"] = owner
        params = {f"v_{k}": v for k, v in values.items()}
        params.update(w_id=floor_id, w_expected=expected)
        result = await self._run.execute(floor_compare_and_set(tuple(values)), params)
        return bool(result.rowcount == 1)

    async def set_active_page(self, floor_id: int, *, expected: int | None, page: int) -> bool:
        current = (
            FLOOR.c.active_page.is_(None) if expected is None else FLOOR.c.active_page == expected
        )
        stmt = (
            update(FLOOR)
            .where(FLOOR.c.id == floor_id, current)
            .values(active_page=page, updated_at=utcnow())
        )
        result = await self._db.execute(stmt)
        return bool(result.rowcount == 1)

    async def set_hidden(self, floor_id: int, hidden: bool) -> None:
        await self._db.execute(update(FLOOR).where(FLOOR.c.id == floor_id).values(hidden=hidden))


class SqlPages(_Repo):
    """Pages."""

    async def add(
        self, *, floor_id: int, number: int, meta: Mapping[str, Any], owner: str | None = None
    ) -> Page:
        stmt = (
            insert(PAGE)
            .values(
                floor_id=floor_id, number=number, status="pending", meta=dict(meta), owner=owner
            )
            .returning(*PAGE.c)
        )
        return convert.page((await self._db.execute(stmt)).one())

    async def get(self, page_id: int) -> Page:
        row = (await self._db.execute(select(PAGE).where(PAGE.c.id == page_id))).first()
        if row is None:
            raise _gone("page")
        return convert.page(row)

    async def context(self, page_id: int) -> PageContext:
        cols = [
            *(c.label(f"p_{c.name}") for c in PAGE.c),
            *(c.label(f"f_{c.name}") for c in FLOOR.c),
            *(c.label(f"b_{c.name}") for c in BRANCH.c),
            SESSION.c.realm_id.label("realm_id"),
        ]
        stmt = (
            select(*cols)
            .select_from(
                PAGE.join(FLOOR, FLOOR.c.id == PAGE.c.floor_id)
                .join(BRANCH, BRANCH.c.id == FLOOR.c.branch_id)
                .join(SESSION, SESSION.c.id == BRANCH.c.session_id)
            )
            .where(PAGE.c.id == page_id)
        )
        row = (await self._db.execute(stmt)).first()
        if row is None:
            raise _gone("page")
        data = row._mapping
        return PageContext(
            page=convert.page(_Sub(data, "p_")),
            floor=convert.floor(_Sub(data, "f_")),
            branch=convert.branch(_Sub(data, "b_")),
            realm_id=data["realm_id"],
        )

    async def of_floors(self, floor_ids: Sequence[int]) -> list[Page]:
        if not floor_ids:
            return []
        stmt = (
            select(PAGE)
            .where(PAGE.c.floor_id.in_(list(floor_ids)))
            .order_by(PAGE.c.floor_id, PAGE.c.number)
        )
        return [convert.page(row) for row in await self._db.execute(stmt)]

    async def compare_and_set(
        self,
        page_id: int,
        *,
        expected: PageStatus,
        status: PageStatus,
        error: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> bool:
        values: dict[str, Any] = {"status": status}
        if error is not None:
            values["error"] = error
        if meta is not None:
            values["meta"] = dict(meta)
        params = {f"v_{k}": v for k, v in values.items()}
        params.update(w_id=page_id, w_expected=expected)
        result = await self._run.execute(page_compare_and_set(tuple(values)), params)
        return bool(result.rowcount == 1)

    async def set_hidden(self, page_id: int, hidden: bool) -> None:
        await self._db.execute(update(PAGE).where(PAGE.c.id == page_id).values(hidden=hidden))

    async def in_status(self, status: PageStatus) -> list[Page]:
        stmt = select(PAGE).where(PAGE.c.status == status).order_by(PAGE.c.id)
        return [convert.page(row) for row in await self._db.execute(stmt)]


class _Sub:
    """Attribute access to the ``prefix``-labelled columns of a joined row."""

    def __init__(self, data: Mapping[Any, Any], prefix: str) -> None:
        self._data = data
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        return self._data[self._prefix + name]


class SqlMessages(_Repo):
    """Messages."""

    async def add(
        self, *, floor_id: int, page_id: int | None, messages: Sequence[NewMessage]
    ) -> None:
        if not messages:
            return
        owner = MESSAGE.c.page_id.is_(None) if page_id is None else MESSAGE.c.page_id == page_id
        start = 0
        if page_id is None:
            # A page's messages arrive once, at commit; only floor inputs are appended to.
            stmt = select(func.max(MESSAGE.c.seq)).where(MESSAGE.c.floor_id == floor_id, owner)
            start = (await self._db.execute(stmt)).scalar() or 0
        await self._run.execute(INSERT_MESSAGES, message_rows(floor_id, page_id, start, messages))

    async def of_floors(self, floor_ids: Sequence[int]) -> list[Message]:
        if not floor_ids:
            return []
        stmt = (
            select(MESSAGE)
            .where(MESSAGE.c.floor_id.in_(list(floor_ids)))
            .order_by(MESSAGE.c.floor_id, MESSAGE.c.page_id.nulls_first(), MESSAGE.c.seq)
        )
        return [convert.message(row) for row in await self._db.execute(stmt)]

    async def window(self, floor_ids: Sequence[int]) -> list[WindowMessage]:
        if not floor_ids:
            return []
        make = WindowMessage._make
        ids = list(floor_ids)
        bucket = window_bucket(len(ids))
        ids += ids[-1:] * (bucket - len(ids))  # a repeated id matches nothing twice
        params = {f"i{n}": floor_id for n, floor_id in enumerate(ids)}
        return [make(row) for row in await self._run.execute(message_window(bucket), params)]

    async def hide_by_ref(self, floor_id: int, platform_ref: str) -> int:
        stmt = (
            update(MESSAGE)
            .where(MESSAGE.c.floor_id == floor_id, MESSAGE.c.platform_ref == platform_ref)
            .values(hidden=True)
        )
        result = await self._db.execute(stmt)
        return int(result.rowcount)


def message_rows(
    floor_id: int, page_id: int | None, start: int, messages: Sequence[NewMessage]
) -> list[dict[str, Any]]:
    """Insert parameters of ``messages``, numbered from ``start + 1``."""
    now = utcnow()
    return [
        {
            "floor_id": floor_id,
            "page_id": page_id,
            "seq": start + index,
            "role": m.role,
            "speaker_id": m.speaker_id,
            "speaker_name": m.speaker_name,
            "raw": m.raw,
            "display": m.raw if m.display is None else m.display,
            "hidden": m.hidden,
            "platform_ref": m.platform_ref,
            "created_at": now,
        }
        for index, m in enumerate(messages, start=1)
    ]


class SqlLinks(_Repo):
    """The platform-message map."""

    async def put(self, link: PlatformLink) -> None:
        where = and_(
            LINK.c.session_id == link.session_id, LINK.c.platform_ref == link.platform_ref
        )
        await self._db.execute(delete(LINK).where(where))
        await self._db.execute(
            insert(LINK).values(
                session_id=link.session_id,
                platform_ref=link.platform_ref,
                branch_id=link.branch_id,
                floor_id=link.floor_id,
                page_id=link.page_id,
                role=link.role,
            )
        )

    async def get(self, session_id: int, platform_ref: str) -> PlatformLink | None:
        stmt = select(LINK).where(
            LINK.c.session_id == session_id, LINK.c.platform_ref == platform_ref
        )
        row = (await self._db.execute(stmt)).first()
        return None if row is None else convert.link(row)
