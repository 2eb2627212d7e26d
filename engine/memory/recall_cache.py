"""What a viewer's memory retrieval reads, kept between turns and checked against the
database's revision.

Loading every record and relation a viewer may see, and turning the rows into values, was the
largest part of memory's cost on a turn's path (issue 18). A repository that keeps a revision
per realm (:class:`MemoryRevisions`: the SQL storage bumps it by triggers on every change of the
realm's records or relations, whichever process or tool makes it) lets a process keep what it
read: one small read of the revision tells whether the copy is still what the database holds.
A repository without revisions is read every time, as before.

Marking records used is the one write the revision leaves out (it happens on every turn and
feeds only the decay tie-break): the process that marks patches its own copies
(:meth:`RecallCache.marked`); another process's marks reach this one's copy with the realm's
next change.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final, Protocol, runtime_checkable

from engine.memory.lineage import Viewpoint
from engine.memory.plan import MutationPlan
from engine.memory.ports import MemoryRepository
from engine.memory.records import MemoryRecord, MemoryRelation, MemoryScope

MAX_CACHED_VIEWS: Final = 64
"""Viewpoints (realm, session, branch lineage) whose records a process keeps; the least
recently used goes first."""

Lineage = tuple[list[MemoryRecord], list[MemoryRelation]]
_Key = tuple[str, str | None, frozenset[str]]


@runtime_checkable
class MemoryRevisions(Protocol):
    """A repository that versions each realm's memory."""

    async def revision(self, realm_id: str) -> int | None:
        """The realm's revision, changed by every write of its records or relations except
        use marks; None when it keeps none (nothing may be cached)."""
        ...


@dataclass(frozen=True, slots=True)
class _Entry:
    revision: int
    records: tuple[MemoryRecord, ...]
    relations: tuple[MemoryRelation, ...]


class RecallCache:
    """Per-viewpoint copies of the records and relations retrieval reads, each valid for one
    revision of its realm."""

    def __init__(self, size: int = MAX_CACHED_VIEWS) -> None:
        self.size = size
        self._entries: OrderedDict[_Key, _Entry] = OrderedDict()
        self.hits = 0
        self.misses = 0

    async def load(
        self, repo: object, view: Viewpoint, read: Callable[[], Awaitable[Lineage]]
    ) -> Lineage:
        """What ``read`` returns for ``view``: the kept copy when the realm's revision is the
        one it was read at, otherwise ``read()`` again (kept when the repository versions)."""
        if not isinstance(repo, MemoryRevisions) or self.size <= 0:
            return await read()
        # The revision is read first: a write landing after it makes the copy look older than
        # it is (read again next time), never newer.
        revision = await repo.revision(view.realm_id)
        if revision is None:
            return await read()
        key = _key(view)
        entry = self._entries.get(key)
        if entry is not None and entry.revision == revision:
            self._entries.move_to_end(key)
            self.hits += 1
            return list(entry.records), list(entry.relations)
        self.misses += 1
        records, relations = await read()
        self._entries[key] = _Entry(revision, tuple(records), tuple(relations))
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
        return records, relations

    async def apply(self, repo: MemoryRepository, plan: MutationPlan) -> None:
        """``repo.apply_plan(plan)``, then the same change to the kept copies of the plan's
        realm when the revision moved by exactly this plan's rows (so nothing else landed in
        between); otherwise those copies are dropped and read again when next needed."""
        if not isinstance(repo, MemoryRevisions) or not self._entries or plan.is_empty:
            await repo.apply_plan(plan)
            return
        realm = self._realm_of(plan)
        before = None if realm is None else await repo.revision(realm)
        await repo.apply_plan(plan)
        if realm is None or before is None or plan.purge_ids:
            self._drop(realm)
            return
        after = await repo.revision(realm)
        # One bump per inserted record or relation and per lifecycle change (the triggers).
        if after != before + len(plan.new_records) + len(plan.changes) + len(plan.relations):
            self._drop(realm)
            return
        for key, entry in list(self._entries.items()):
            if key[0] != realm:
                continue
            patched = _patched(entry, plan, key, after) if entry.revision == before else None
            if patched is None:
                del self._entries[key]
            else:
                self._entries[key] = patched

    def _realm_of(self, plan: MutationPlan) -> str | None:
        realms = {r.realm_id for r in plan.new_records}
        changed = {c.record_id for c in plan.changes}
        for entry in self._entries.values():
            realms.update(r.realm_id for r in entry.records if r.id in changed)
        return next(iter(realms)) if len(realms) == 1 else None

    def _drop(self, realm_id: str | None) -> None:
        for key in [k for k in self._entries if realm_id is None or k[0] == realm_id]:
            del self._entries[key]

    def marked(self, realm_id: str, ids: Sequence[str], *, floor_no: int, at: datetime) -> None:
        """This process marked ``ids`` used (as the repository's ``mark_used`` stores it):
        the same change to every kept copy of the realm."""
        wanted = frozenset(ids)
        for key, entry in self._entries.items():
            if key[0] != realm_id:
                continue
            records = tuple(
                replace(r, last_used_floor=floor_no, last_used_at=at) if r.id in wanted else r
                for r in entry.records
            )
            self._entries[key] = replace(entry, records=records)

    def clear(self) -> None:
        """Forget every copy."""
        self._entries.clear()


def _patched(entry: _Entry, plan: MutationPlan, key: _Key, revision: int) -> _Entry | None:
    """``entry`` with ``plan`` applied as the repository applies it (None: it cannot tell)."""
    realm_id, session_id, branch_ids = key
    records = {r.id: r for r in entry.records}
    for change in plan.changes:
        current = records.get(change.record_id)
        if current is None:
            return None  # a record this copy does not hold: read again
        records[change.record_id] = replace(
            current,
            lifecycle=change.new,
            updated_at=change.at,
            ended_branch=change.ended_branch,
            ended_floor=change.ended_floor,
        )
    for record in plan.new_records:
        if (
            record.realm_id == realm_id
            and (record.scope is MemoryScope.GLOBAL or record.session_id == session_id)
            and (record.origin_branch is None or record.origin_branch in branch_ids)
        ):
            records[record.id] = record
    ordered = sorted(records.values(), key=lambda r: (r.created_floor, r.id))
    relations = entry.relations + tuple(
        r for r in plan.relations if r.source_id in records or r.target_id in records
    )
    return _Entry(revision, tuple(ordered), relations)


def _key(view: Viewpoint) -> _Key:
    return (view.realm_id, view.session_id, frozenset(view.branch_ids))
