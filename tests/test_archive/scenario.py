"""A session that uses everything an archive must carry, built through the real services."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from adapters.storage import SqlStorage
from adapters.storage.memory_repo import SqlMemoryRepository
from engine.memory.records import (
    MemoryKind,
    MemoryRecord,
    MemoryRelation,
    MemoryScope,
    MemorySource,
    Provenance,
    RelationKind,
    floor_scope_id,
)
from engine.timeline.values import NewMessage, SessionSettings
from tests.test_storage.support import World, put

PLATFORM, REALM, KEY = "discord", "guild", "chan"
T0 = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


async def build_session(storage: SqlStorage) -> int:
    """Branches, regenerated pages and swipes, a fork, variables in every scope, hidden and
    failed floors, platform links, a snapshot, bound assets and memory; returns the session id."""
    world = World(storage)
    opened = await world.session(KEY, REALM)
    session, main = opened.session, opened.main
    realm_id = session.realm_id
    async with storage.unit_of_work() as uow:
        await uow.assets.put(realm_id=realm_id, kind="card", name="Sera", data={"name": "Sera"})
        await uow.assets.put(realm_id=realm_id, kind="preset", name="P", data={"temperature": 1})
        await uow.assets.put(realm_id=realm_id, kind="worldbook", name="W", data={"entries": {}})
        await uow.assets.put(realm_id=realm_id, kind="regex", name="R", data={"scripts": []})
        await uow.assets.put(realm_id=realm_id, kind="card", name="Unbound", data={"x": 1})
    await world.timeline.update_settings(
        session.id,
        SessionSettings(
            character="Sera",
            preset="P",
            worldbooks=("W",),
            regex_sets=("R",),
            extra={"custom": {"kept": True}},
        ),
    )
    await world.variables.set(main.id, "global", "g_before", 1)
    await world.variables.set(main.id, "chat", "c", "chat value")
    t1 = await world.turn(
        main.id,
        [
            put("page", "p", 1),
            put("floor", "f", 2),
            put("branch", "b", 3),
            put("chat", "c2", [1, {"x": "y"}]),
            put("global", "g", "ü"),
        ],
        text="first",
    )
    await world.variables.set(main.id, "branch", "explicit_b", True)
    await world.variables.set(main.id, "floor", "explicit_f", None)
    t2 = await world.turn(main.id, [put("branch", "b", 4)], text="second")
    await world.regenerate(t2.floor.id, [put("branch", "b", 5)], text="second again")
    await world.timeline.activate_page(t2.floor.id, 1)  # swipe back to the first page
    await world.history.link_message(
        session.id, "msg-1", floor_id=t1.floor.id, page_id=t1.page.id, role="assistant"
    )
    await world.history.link_message(
        session.id, "msg-in-2", floor_id=t2.floor.id, page_id=None, role="user"
    )
    await world.history.hide_message(session.id, "msg-in-2")  # hides floor 2
    alt = await world.timeline.fork(main.id, name="alt", after_floor=1)
    await world.turn(alt.id, [put("branch", "b", 40), put("global", "g", "alt")], text="alt")
    await world.variables.delete(alt.id, "branch", "b")
    failed = await world.timeline.open_floor(
        main.id, [NewMessage(role="user", raw="boom", speaker_name="Ann", platform_ref="m-9")]
    )
    await world.timeline.start_generating(failed.id)
    await world.timeline.add_page(failed.id)
    await world.timeline.fail_floor(failed.id, "model exploded")
    async with storage.unit_of_work() as uow:
        await uow.variables.save_snapshot(t1.page.id, {"b": 3})

    memory = SqlMemoryRepository(storage.engine)
    sid, rid = str(session.id), str(realm_id)

    def record(n: int, scope: MemoryScope, scope_id: str, **extra: object) -> MemoryRecord:
        return MemoryRecord(
            id=f"mem-{n}",
            kind=MemoryKind.FACT,
            scope=scope,
            scope_id=scope_id,
            realm_id=rid,
            session_id=None if scope is MemoryScope.GLOBAL else sid,
            origin_branch=None if scope is MemoryScope.GLOBAL else str(main.id),
            text=f"fact {n}",
            provenance=Provenance(source=MemorySource.AGENT, floor_no=1, message_ref="msg-1"),
            created_at=T0 + timedelta(seconds=n // 2),  # ties on purpose
            created_floor=1,
            key=f"k{n}",
            flags=("pinned",),
            **extra,  # type: ignore[arg-type]
        )

    records = [
        record(1, MemoryScope.CHAT, sid),
        record(2, MemoryScope.BRANCH, str(alt.id), ended_branch=str(alt.id), ended_floor=2),
        record(10, MemoryScope.FLOOR, floor_scope_id(str(main.id), 1), tier=None),
        record(3, MemoryScope.GLOBAL, rid),  # realm-wide: not part of the session
    ]
    await memory.add_records(records)
    async with storage.unit_of_work() as uow:
        from sqlalchemy import insert

        from adapters.storage.memory_repo import relation_values
        from adapters.storage.tables import RELATION

        relation = MemoryRelation(
            source_id="mem-10",
            target_id="mem-1",
            kind=RelationKind.UPDATES,
            created_at=T0,
            floor_no=1,
            note="newer",
        )
        await uow.db.execute(insert(RELATION).values(**relation_values(relation)))
    return session.id
