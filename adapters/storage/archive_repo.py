"""Native archives on SQL: read a whole session into an :class:`~engine.formats.archive.Archive`
and write an archive into a NEW session.

:meth:`SqlArchiveRepository.export_session` reads everything in one reading unit of work (one
consistent snapshot), a handful of queries per table, joined by session rather than by long
``IN`` lists. :meth:`SqlArchiveRepository.import_session` writes the whole archive in ONE
transaction: every row gets a new id and every reference is remapped; an error anywhere rolls
all of it back, so a failed import leaves the database as it was. It never changes an existing
row: the session must not exist, a bound asset whose name is taken by different content is
stored under a new name, and a realm-global variable the realm already has keeps its value (see
:mod:`engine.formats.archive` for these choices).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sqlalchemy import Table, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from adapters.storage.archive_export import ASSET_SETTINGS, ArchiveExporter, utc
from adapters.storage.memory_repo import record_values
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
from adapters.storage.uow import SqlStorage
from engine.errors import ConflictError
from engine.formats import archive_memory as am
from engine.formats.archive import (
    Archive,
)
from engine.timeline.values import MAX_NAME_LENGTH

MAX_RENAME_ATTEMPTS: Final = 1_000
"""How many ``name (n)`` spellings are tried for an asset whose name is taken."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportedArchive:
    """What an import created: the new session's id and the assets it had to rename."""

    session_id: int
    realm_id: int
    renamed_assets: Mapping[tuple[str, str], str] = field(default_factory=dict)
    kept_globals: tuple[str, ...] = ()


class SqlArchiveRepository:
    """Archive export and import on one :class:`SqlStorage`."""

    def __init__(self, storage: SqlStorage) -> None:
        self._storage = storage

    # ------------------------------------------------------------------------------ export

    async def export_session(self, platform: str, key: str, *, now: datetime) -> Archive:
        """The whole session ``(platform, key)`` as an archive; TimelineNotFoundError if none."""
        async with self._storage.read() as uow:
            return await ArchiveExporter(uow.db).run(platform, key, now)

    # ------------------------------------------------------------------------------ import

    async def import_session(
        self, archive: Archive, *, platform: str, realm_key: str, key: str
    ) -> ImportedArchive:
        """Write ``archive`` as the new session ``(platform, key)`` in realm
        ``(platform, realm_key)``, all or nothing; ConflictError if the session exists."""
        async with self._storage.unit_of_work() as uow:
            return await _Importer(uow.db, archive).run(platform, realm_key, key)


class _Importer:
    def __init__(self, db: AsyncSession, archive: Archive) -> None:
        self.db = db
        self.a = archive

    async def _insert_many(self, table: Table, rows: Sequence[dict[str, Any]]) -> list[int]:
        """Insert ``rows`` in order and return their new ids, in the same order."""
        if not rows:
            return []
        stmt = insert(table).returning(table.c.id, sort_by_parameter_order=True)
        return [r.id for r in await self.db.execute(stmt, list(rows))]

    async def run(self, platform: str, realm_key: str, key: str) -> ImportedArchive:
        a = self.a
        taken = await self.db.execute(
            select(SESSION.c.id).where(SESSION.c.platform == platform, SESSION.c.key == key)
        )
        if taken.first() is not None:
            raise ConflictError(f"a {platform} session named {key!r} already exists")
        realm_row = (
            await self.db.execute(
                select(REALM.c.id).where(REALM.c.platform == platform, REALM.c.key == realm_key)
            )
        ).first()
        if realm_row is None:
            (realm_id,) = await self._insert_many(
                REALM, [{"platform": platform, "key": realm_key}]
            )
        else:
            realm_id = realm_row.id
        renamed = await self._assets(realm_id)
        settings = _rebind(a.session.settings, renamed)
        (sid,) = await self._insert_many(
            SESSION,
            [
                {
                    "realm_id": realm_id,
                    "platform": platform,
                    "key": key,
                    "settings": settings,
                    "created_at": utc(a.session.created_at),
                }
            ],
        )
        branch_ids: list[int] = []
        for b in a.branches:  # one by one: a parent's new id is needed by its children
            (new,) = await self._insert_many(
                BRANCH,
                [
                    {
                        "session_id": sid,
                        "name": b.name,
                        "parent_id": None if b.parent is None else branch_ids[b.parent],
                        "fork_floor": b.fork_floor,
                        "fork_page": b.fork_page,
                        "created_at": utc(b.created_at),
                    }
                ],
            )
            branch_ids.append(new)
        floor_ids = await self._insert_many(
            FLOOR,
            [
                {
                    "branch_id": branch_ids[f.branch],
                    "seq": f.seq,
                    "state": f.state,
                    "active_page": f.active_page,
                    "hidden": f.hidden,
                    "error": f.error,
                    "created_at": utc(f.created_at),
                    "updated_at": utc(f.updated_at),
                    "speaker": f.speaker,
                    "seed": f.seed,
                }
                for f in a.floors
            ],
        )
        page_ids = await self._insert_many(
            PAGE,
            [
                {
                    "floor_id": floor_ids[p.floor],
                    "number": p.number,
                    "status": p.status,
                    "hidden": p.hidden,
                    "error": p.error,
                    "meta": dict(p.meta),
                    "created_at": utc(p.created_at),
                }
                for p in a.pages
            ],
        )

        def opt(ids: list[int], index: int | None) -> int | None:
            return None if index is None else ids[index]

        await self._insert_many(
            MESSAGE,
            [
                {
                    "floor_id": floor_ids[m.floor],
                    "page_id": opt(page_ids, m.page),
                    "seq": m.seq,
                    "role": m.role,
                    "speaker_id": m.speaker_id,
                    "speaker_name": m.speaker_name,
                    "raw": m.raw,
                    "display": m.display,
                    "hidden": m.hidden,
                    "platform_ref": m.platform_ref,
                    "created_at": utc(m.created_at),
                }
                for m in a.messages
            ],
        )
        await self._insert_many(
            LINK,
            [
                {
                    "session_id": sid,
                    "platform_ref": k.platform_ref,
                    "branch_id": branch_ids[k.branch],
                    "floor_id": floor_ids[k.floor],
                    "page_id": opt(page_ids, k.page),
                    "role": k.role,
                }
                for k in a.links
            ],
        )
        await self._insert_many(
            LOG,
            [
                {
                    "source": e.source,
                    "scope": e.scope,
                    "key": e.key,
                    "op": e.op,
                    "value": e.value,
                    "realm_id": realm_id,
                    "session_id": sid,
                    "branch_id": opt(branch_ids, e.branch),
                    "seq": e.seq,
                    "floor_id": opt(floor_ids, e.floor),
                    "page_id": opt(page_ids, e.page),
                    "created_at": utc(e.created_at),
                }
                for e in a.variable_log
            ],
        )
        kept = await self._values(realm_id, sid, branch_ids, floor_ids, page_ids)
        if a.snapshots:
            await self.db.execute(
                insert(SNAPSHOT),
                [{"page_id": page_ids[s.page], "data": dict(s.data)} for s in a.snapshots],
            )
        await self._memory(realm_id, sid, branch_ids)
        return ImportedArchive(
            session_id=sid, realm_id=realm_id, renamed_assets=renamed, kept_globals=kept
        )

    async def _values(
        self,
        realm_id: int,
        sid: int,
        branch_ids: list[int],
        floor_ids: list[int],
        page_ids: list[int],
    ) -> tuple[str, ...]:
        owners = {"branch": branch_ids, "floor": floor_ids, "page": page_ids}
        globals_ = [v for v in self.a.variable_values if v.scope == "global"]
        existing: set[str] = set()
        if globals_:
            stmt = select(VALUE.c.key).where(
                VALUE.c.scope == "global",
                VALUE.c.owner_id == realm_id,
                VALUE.c.key.in_([v.key for v in globals_]),
            )
            existing = {r.key for r in await self.db.execute(stmt)}
        rows: list[dict[str, Any]] = []
        for v in self.a.variable_values:
            if v.scope == "global":
                if v.key in existing:
                    continue
                owner = realm_id
            elif v.scope == "chat":
                owner = sid
            else:
                assert v.owner is not None  # validated: owned scopes name their owner
                owner = owners[v.scope][v.owner]
            rows.append({"scope": v.scope, "owner_id": owner, "key": v.key, "value": v.value})
        if rows:
            await self.db.execute(insert(VALUE), rows)
        return tuple(sorted(existing))

    async def _assets(self, realm_id: int) -> dict[tuple[str, str], str]:
        renamed: dict[tuple[str, str], str] = {}
        for asset in self.a.assets:
            name = asset.name
            for attempt in range(1, MAX_RENAME_ATTEMPTS + 1):
                if attempt > 1:
                    suffix = f" ({attempt})"
                    name = asset.name[: MAX_NAME_LENGTH - len(suffix)] + suffix
                found = (
                    await self.db.execute(
                        select(ASSET.c.data).where(
                            ASSET.c.realm_id == realm_id,
                            ASSET.c.kind == asset.kind,
                            ASSET.c.name == name,
                        )
                    )
                ).first()
                if found is not None and dict(found.data or {}) == dict(asset.data):
                    break  # the realm already has this very asset: share it
                if found is None:
                    await self.db.execute(
                        insert(ASSET).values(
                            realm_id=realm_id,
                            kind=asset.kind,
                            name=name,
                            data=dict(asset.data),
                            created_at=utc(asset.created_at),
                            updated_at=utc(asset.updated_at),
                        )
                    )
                    break
            else:
                raise ConflictError(
                    f"no free name for {asset.kind} {asset.name!r} after "
                    f"MAX_RENAME_ATTEMPTS={MAX_RENAME_ATTEMPTS}"
                )
            if name != asset.name:
                renamed[(asset.kind, asset.name)] = name
        return renamed

    async def _memory(self, realm_id: int, sid: int, branch_ids: list[int]) -> None:
        prefix = uuid.uuid4().hex[:16]
        # Zero-padded positions keep the archive order when records are sorted by id.
        new_ids = [f"imp-{prefix}-{i:08d}" for i in range(len(self.a.memory_records))]
        records = [
            am.from_archive_record(
                item,
                new_id=new_ids[i],
                realm_id=str(realm_id),
                session_id=str(sid),
                branch_id=lambda index: str(branch_ids[index]),
            )
            for i, item in enumerate(self.a.memory_records)
        ]
        if records:
            await self.db.execute(insert(RECORD), [record_values(r) for r in records])
        relations = [
            {
                "source_id": new_ids[r.source],
                "target_id": new_ids[r.target],
                "kind": r.kind.value,
                "created_at": utc(r.created_at),
                "floor_no": r.floor_no,
                "note": r.note,
            }
            for r in self.a.memory_relations
        ]
        if relations:
            await self.db.execute(insert(RELATION), relations)


def _rebind(settings: Mapping[str, Any], renamed: Mapping[tuple[str, str], str]) -> dict[str, Any]:
    """The session settings with renamed assets' names replaced."""
    out = dict(settings)
    for kind, attr in ASSET_SETTINGS:
        bound = out.get(attr)
        if isinstance(bound, str):
            out[attr] = renamed.get((kind, bound), bound)
        elif isinstance(bound, list):
            out[attr] = [renamed.get((kind, n), n) if isinstance(n, str) else n for n in bound]
    return out
