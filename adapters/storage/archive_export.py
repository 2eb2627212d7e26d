"""Reading a whole session into a native archive (the export half of
:mod:`adapters.storage.archive_repo`). The table handles are the repositories' own, so each
table is declared once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final, TypeVar

from sqlalchemy import Table, select
from sqlalchemy.ext.asyncio import AsyncSession

from adapters.storage import convert
from adapters.storage.memory_repo import record_of, relation_of
from adapters.storage.tables import (
    ASSET,
    BRANCH,
    FLOOR,
    LINK,
    LOG,
    MESSAGE,
    PAGE,
    REALM,
    RECORD,
    RELATION,
    SESSION,
    SNAPSHOT,
    VALUE,
)
from engine.formats import archive_memory as am
from engine.formats.archive import (
    Archive,
    ArchiveAsset,
    ArchiveBranch,
    ArchiveFloor,
    ArchiveLink,
    ArchiveLogEntry,
    ArchiveMessage,
    ArchivePage,
    ArchiveSession,
    ArchiveSnapshot,
    ArchiveValue,
)
from engine.timeline.errors import TimelineNotFoundError
from engine.variables.values import SCOPES, Scope

ASSET_SETTINGS: Final = (
    ("card", "character"),
    ("preset", "preset"),
    ("worldbook", "worldbooks"),
    ("regex", "regex_sets"),
)
"""Asset kinds and the session setting that binds each."""

_V = TypeVar("_V")


def utc(value: datetime | None) -> datetime | None:
    return None if value is None else value.astimezone(UTC)


class ArchiveExporter:
    """Reads one session, table by table, inside one reading unit of work."""

    def __init__(self, db: AsyncSession) -> None:
        self.db = db

    async def _all(self, stmt: Any) -> list[Any]:
        return list(await self.db.execute(stmt))

    async def _read(self, table: Table, where: Any, to_value: Callable[[Any], _V]) -> list[_V]:
        """The rows of ``table`` that match ``where``, in id order, as engine values."""
        rows = await self._all(select(table).where(where).order_by(table.c.id))
        return [to_value(row) for row in rows]

    async def run(self, platform: str, key: str, now: datetime) -> Archive:
        row = (
            await self.db.execute(
                select(SESSION).where(SESSION.c.platform == platform, SESSION.c.key == key)
            )
        ).first()
        if row is None:
            raise TimelineNotFoundError(f"no {platform} session named {key!r}")
        session = convert.session(row)
        realm = convert.realm(
            (await self.db.execute(select(REALM).where(REALM.c.id == session.realm_id))).one()
        )
        sid = session.id
        branches = await self._read(BRANCH, BRANCH.c.session_id == sid, convert.branch)
        b_index = {b.id: i for i, b in enumerate(branches)}
        in_session = select(BRANCH.c.id).where(BRANCH.c.session_id == sid)
        floors = await self._read(FLOOR, FLOOR.c.branch_id.in_(in_session), convert.floor)
        f_index = {f.id: i for i, f in enumerate(floors)}
        floor_ids = select(FLOOR.c.id).where(FLOOR.c.branch_id.in_(in_session))
        pages = await self._read(PAGE, PAGE.c.floor_id.in_(floor_ids), convert.page)
        p_index = {p.id: i for i, p in enumerate(pages)}
        page_ids = select(PAGE.c.id).where(PAGE.c.floor_id.in_(floor_ids))
        messages = await self._read(MESSAGE, MESSAGE.c.floor_id.in_(floor_ids), convert.message)
        links = await self._read(LINK, LINK.c.session_id == sid, convert.link)
        log = await self._read(LOG, LOG.c.session_id == sid, convert.log_entry)
        touched = sorted({e.mutation.key for e in log if e.mutation.scope == "global"})

        def opt(index: Mapping[int, int], value: int | None) -> int | None:
            return None if value is None else index[value]

        values: list[ArchiveValue] = []
        owners: list[tuple[Scope, Any, dict[int, int]]] = [
            ("page", page_ids, p_index),
            ("floor", floor_ids, f_index),
            ("branch", in_session, b_index),
        ]
        for scope, ids, index in owners:
            stmt = select(VALUE).where(VALUE.c.scope == scope, VALUE.c.owner_id.in_(ids))
            for r in await self._all(stmt):
                values.append(
                    ArchiveValue(scope=scope, owner=index[r.owner_id], key=r.key, value=r.value)
                )
        for r in await self._all(
            select(VALUE).where(VALUE.c.scope == "chat", VALUE.c.owner_id == sid)
        ):
            values.append(ArchiveValue(scope="chat", owner=None, key=r.key, value=r.value))
        if touched:
            stmt = select(VALUE).where(
                VALUE.c.scope == "global",
                VALUE.c.owner_id == realm.id,
                VALUE.c.key.in_(touched),
            )
            for r in await self._all(stmt):
                values.append(ArchiveValue(scope="global", owner=None, key=r.key, value=r.value))
        values.sort(
            key=lambda v: (SCOPES.index(v.scope), -1 if v.owner is None else v.owner, v.key)
        )
        snapshots = sorted(
            (
                ArchiveSnapshot(page=p_index[r.page_id], data=dict(r.data))
                for r in await self._all(select(SNAPSHOT).where(SNAPSHOT.c.page_id.in_(page_ids)))
            ),
            key=lambda s: s.page,
        )
        # Read by name from the stored form, as an import rebinds them (archive_repo._rebind).
        settings = session.settings
        stored = settings.to_json()
        wanted: list[tuple[str, str]] = []
        for kind, attr in ASSET_SETTINGS:
            bound = stored.get(attr)
            names = [bound] if isinstance(bound, str) else list(bound or ())
            wanted.extend((kind, name) for name in names)
        assets: list[ArchiveAsset] = []
        for kind, name in sorted(set(wanted)):
            r = (
                await self.db.execute(
                    select(ASSET).where(
                        ASSET.c.realm_id == realm.id, ASSET.c.kind == kind, ASSET.c.name == name
                    )
                )
            ).first()
            if r is not None:
                a = convert.asset(r)
                assets.append(
                    ArchiveAsset(
                        kind=a.kind,
                        name=a.name,
                        data=dict(a.data),
                        created_at=a.created_at,
                        updated_at=a.updated_at,
                    )
                )
        records, relations = await self._memory(str(sid), {str(k): v for k, v in b_index.items()})
        return Archive(
            session=ArchiveSession(
                platform=session.platform,
                key=session.key,
                realm_platform=realm.platform,
                realm_key=realm.key,
                settings=settings.to_json(),
                created_at=session.created_at,
            ),
            exported_at=now,
            branches=tuple(
                ArchiveBranch(
                    name=b.name,
                    parent=opt(b_index, b.parent_id),
                    fork_floor=b.fork_floor,
                    fork_page=b.fork_page,
                    created_at=b.created_at,
                )
                for b in branches
            ),
            floors=tuple(
                ArchiveFloor(
                    branch=b_index[f.branch_id],
                    seq=f.seq,
                    state=f.state,
                    active_page=f.active_page,
                    hidden=f.hidden,
                    error=f.error,
                    created_at=f.created_at,
                    updated_at=f.updated_at,
                    speaker=f.speaker,
                    seed=f.seed,
                )
                for f in floors
            ),
            pages=tuple(
                ArchivePage(
                    floor=f_index[p.floor_id],
                    number=p.number,
                    status=p.status,
                    hidden=p.hidden,
                    error=p.error,
                    meta=dict(p.meta),
                    created_at=p.created_at,
                )
                for p in pages
            ),
            messages=tuple(
                ArchiveMessage(
                    floor=f_index[m.floor_id],
                    page=opt(p_index, m.page_id),
                    seq=m.seq,
                    role=m.role,
                    speaker_id=m.speaker_id,
                    speaker_name=m.speaker_name,
                    raw=m.raw,
                    display=m.display,
                    hidden=m.hidden,
                    platform_ref=m.platform_ref,
                    created_at=m.created_at,
                )
                for m in messages
            ),
            links=tuple(
                ArchiveLink(
                    platform_ref=k.platform_ref,
                    branch=b_index[k.branch_id],
                    floor=f_index[k.floor_id],
                    page=opt(p_index, k.page_id),
                    role=k.role,
                )
                for k in links
            ),
            variable_log=tuple(
                ArchiveLogEntry(
                    source=e.source,
                    scope=e.mutation.scope,
                    key=e.mutation.key,
                    op=e.mutation.op,
                    value=e.mutation.value,
                    branch=opt(b_index, e.branch_id),
                    seq=e.seq,
                    floor=opt(f_index, e.floor_id),
                    page=opt(p_index, e.page_id),
                    created_at=e.created_at,
                )
                for e in log
            ),
            variable_values=tuple(values),
            snapshots=tuple(snapshots),
            assets=tuple(assets),
            memory_records=records,
            memory_relations=relations,
        )

    async def _memory(
        self, session_id: str, branch_index: Mapping[str, int]
    ) -> tuple[tuple[am.ArchiveMemoryRecord, ...], tuple[am.ArchiveMemoryRelation, ...]]:
        rows = await self._all(select(RECORD).where(RECORD.c.session_id == session_id))
        found = sorted((record_of(r) for r in rows), key=lambda r: (r.created_at, r.id))
        records: list[am.ArchiveMemoryRecord] = []
        r_index: dict[str, int] = {}
        for record in found:
            item = am.to_archive_record(record, branch_index)
            if item is not None:
                r_index[record.id] = len(records)
                records.append(item)
        ids = select(RECORD.c.id).where(RECORD.c.session_id == session_id)
        rel_rows = await self._all(
            select(RELATION).where(RELATION.c.source_id.in_(ids)).order_by(RELATION.c.id)
        )
        relations = [am.to_archive_relation(relation_of(r), r_index) for r in rel_rows]
        return tuple(records), tuple(r for r in relations if r is not None)
