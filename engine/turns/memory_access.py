"""The session side of long-term memory (:mod:`engine.memory`): the block a turn retrieves,
the after-commit work that stores what a turn taught (in tasks owned here), and the memories
a front end lists or forgets. Everything here is a no-op or a clear refusal when the
application runs without a memory service."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Mapping
from typing import Any, Final

from engine.errors import ConfigurationError, EngineError, NotFoundError
from engine.memory.lineage import Viewpoint, visible_records
from engine.memory.ports import MemoryQuery
from engine.memory.records import MemoryRecord
from engine.memory.scoping import viewpoint_for
from engine.memory.service import MemoryService
from engine.memory.story_dates import story_date_of
from engine.ports import Storage
from engine.prompt.inputs import MemoryItem
from engine.turns.api import (
    MEMORY_LIST_LIMIT,
    MemoryKindName,
    MemoryView,
    Scope,
    SessionKey,
)
from engine.turns.context import TurnRead
from engine.turns.profiles import ProfileSnapshot
from engine.turns.sessions import Sessions
from engine.turns.workflow import ModelFor
from engine.variables import store

__all__ = ["MAX_MEMORY_LIST", "MEMORY_RECENT_LINES", "MemoryAccess"]

log = logging.getLogger(__name__)

MEMORY_RECENT_LINES: Final = 6
"""Recent chat lines memory retrieval ranks relevance against (with the new message)."""
MAX_MEMORY_LIST: Final = 100
"""``memories`` returns at most this many records, whatever limit is asked for."""

_MEMORY_KINDS: Final[dict[str, MemoryKindName]] = {
    "fact": "fact",
    "summary": "summary",
    "open_loop": "open_loop",
}
_MEMORY_SCOPES: Final[dict[str, Scope]] = {
    "global": "global",
    "chat": "chat",
    "branch": "branch",
    "floor": "floor",
}


class MemoryAccess:
    """Retrieval for turns, owned after-commit tasks, and listing or forgetting memories."""

    def __init__(
        self,
        memory: MemoryService | None,
        storage: Storage,
        sessions: Sessions,
        *,
        model_for: ModelFor,
    ) -> None:
        self.service = memory
        self._storage = storage
        self._sessions = sessions
        self._model_for = model_for
        # After-commit memory work runs in owned tasks so the reply is not held up by it.
        self._background: set[asyncio.Task[None]] = set()

    async def retrieve(
        self, view: Viewpoint, read: TurnRead, budget: int | None, *, mark_used: bool = True
    ) -> tuple[MemoryItem, ...]:
        """The memory block for a turn within ``budget`` tokens (the memory service's default
        when None; none when memory is off or cannot be read). A dry run passes
        ``mark_used=False``: looking must not feed decay."""
        if self.service is None:
            return ()
        recent = [line.text for line in read.history[-MEMORY_RECENT_LINES:]]
        try:
            block = await self.service.retrieve(
                view,
                read.user_input or "",
                recent_turns=recent,
                budget=budget,
                mark_used=False,
            )
        except EngineError as exc:
            log.warning("memory retrieval failed, the turn goes on without it: %s", exc)
            return ()
        if mark_used and block.record_ids:
            # The use marks feed decay only: written in an owned task, off the turn's path.
            self._own(self.service.note_used(view, block.record_ids)(), "memory-mark-used")
        if not block.text:
            return ()
        return (MemoryItem(id=",".join(block.record_ids) or "memory", text=block.text),)

    def after_commit(
        self,
        view: Viewpoint,
        read: TurnRead,
        reply: str,
        meta: Mapping[str, Any],
        snapshot: ProfileSnapshot,
    ) -> None:
        """After a turn committed, in an owned task: the memory agent (or the summary tags)
        stores what the turn taught; it never fails the committed turn."""
        memory = self.service
        if memory is None:
            return
        profile = snapshot.profile("memory")
        summaries = [str(item.get("text", "")) for item in meta.get("summaries", ())]
        # The in-story date the turn was played on, as its variables held it (issue 18).
        story_date = story_date_of(read.state.merged(), memory.settings.story_date_variable)
        model_for = self._model_for

        async def work() -> None:
            try:
                await memory.after_commit(
                    view,
                    user_text=read.user_input or "",
                    reply_text=reply,
                    tag_summaries=summaries,
                    model=model_for(profile),
                    model_name=profile.model,
                    story_date=story_date,
                )
            except Exception:  # memory must never break the conversation
                log.exception("memory after commit failed")

        self._own(work(), "memory-after-commit")

    def _own(self, work: Awaitable[None], name: str) -> None:
        """Run ``work`` in a task owned here (drained and cancelled on close)."""

        async def guarded() -> None:
            try:
                await work
            except Exception:  # memory must never break the conversation
                log.exception("%s failed", name)

        task = asyncio.get_running_loop().create_task(guarded(), name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def drain(self, timeout_s: float = 30.0) -> None:
        """Wait for after-commit work still running (up to ``timeout_s``)."""
        if self._background:
            await asyncio.wait(set(self._background), timeout=timeout_s)

    async def aclose(self, grace_s: float = 5.0) -> None:
        """Let after-commit work finish briefly, then cancel what is left."""
        await self.drain(grace_s)
        for task in list(self._background):
            task.cancel()
        for task in list(self._background):
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def memories(
        self,
        key: SessionKey,
        branch: str,
        *,
        query: str | None = None,
        limit: int = MEMORY_LIST_LIMIT,
    ) -> list[MemoryView]:
        """The memories the head of ``branch`` sees: with ``query`` the best matches first,
        otherwise the newest first; at most ``limit`` (capped at :data:`MAX_MEMORY_LIST`)."""
        memory = self._or_refuse()
        limit = max(0, min(limit, MAX_MEMORY_LIST))
        ids, target = await self._sessions.target(key, branch)
        async with self._storage.unit_of_work() as uow:
            session = await uow.sessions.get(ids.session_id)
            branches = await uow.branches.list(ids.session_id)
            head = await store.head_of(uow, await store.lineage_of(uow, target))
        view = viewpoint_for(session, target, branches, head)
        records: list[MemoryRecord]
        if query and query.strip():
            records = [h.record for h in await memory.search(view, query, limit=limit)]
        else:
            found = await memory.repo.query_records(
                MemoryQuery(
                    realm_id=view.realm_id,
                    session_id=view.session_id,
                    lifecycles=None,
                    branch_ids=frozenset(view.branch_ids),
                )
            )
            relations = await memory.repo.relations_for([r.id for r in found])
            records = visible_records(found, relations, view)
            records.sort(key=lambda r: (-r.created_floor, r.id))
            records = records[:limit]
        return [_memory_view(r) for r in records]

    async def forget(self, key: SessionKey, memory_id: str) -> None:
        """Forget a memory of this session or of its realm, on every branch; NotFoundError
        for an id that does not exist or belongs to another session or realm."""
        memory = self._or_refuse()
        ids = await self._sessions.ids(key)
        found = await memory.repo.get_records([memory_id])
        record = found[0] if found else None
        if (
            record is None
            or record.realm_id != str(ids.realm_id)
            or record.session_id not in (None, str(ids.session_id))
        ):
            raise NotFoundError(f"no memory {memory_id!r} in session {key.key}")
        await memory.forget(record.id, reason=f"forgotten from {key.platform}")

    def _or_refuse(self) -> MemoryService:
        if self.service is None:
            raise ConfigurationError("memory is not enabled in this tavernbot (no memory service)")
        return self.service


def _memory_view(record: MemoryRecord) -> MemoryView:
    return MemoryView(
        id=record.id,
        kind=_MEMORY_KINDS[record.kind.value],
        text=record.display,
        scope=_MEMORY_SCOPES[record.scope.value],
        importance=record.importance,
    )
