"""``TavernService``: the engine's :class:`~engine.turns.api.RoleplayService`, on the ports.

A turn (DESIGN.md section 6, seed 003 section 7), with short transactions only::

    1  record the input on a new draft floor, move it to generating, add page 1   (timeline)
       read what the turn needs: assets, recent chat, variables, timed state       (one unit)
    2-8  director, memory retrieval, assembly, narrator (streamed, tools), summary
       tags, regex scripts, verifier                                                (no unit)
    9  commit the page: messages, staged writes, meta; floor committed             (one unit)

Any failure fails the page (and a new floor with it), drops the staged writes and raises an
:class:`~engine.errors.EngineError` for the front end; the branch takes the next message.
One turn at a time per branch (:class:`~engine.turns.locks.BranchLocks`). The service is put
together from :mod:`engine.turns.turn_ops` (turns and swipes), :mod:`engine.turns.session_ops`
(sessions, branches, variables, links, assets, profiles), :mod:`engine.turns.front_ops`
(personas, memory, asset binding, current branch, options, closing) and
:mod:`engine.turns.base`; imports, exports and dry runs live in :mod:`engine.turns.transfer`.

A closed session refuses turns (:class:`~engine.turns.front_ops.SessionClosedError`), and a
speaker with a persona in the realm is named by it (their ``{{user}}``) on the floor they write.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from engine.prompt.tokens import counter_for_model
from engine.timeline.service import INTERRUPTED, INTERRUPTED_DRAFT
from engine.timeline.values import MAIN_BRANCH, Floor
from engine.turns.api import OnText, ReplyView, SessionKey, UserLine
from engine.turns.base import MAX_INPUT_CHARS, MEMORY_RECENT_LINES, SystemClock
from engine.turns.errors import NothingToDoError
from engine.turns.front_ops import FrontEndOps
from engine.turns.greeting import greet
from engine.turns.turn_ops import TurnOps

__all__ = [
    "INTERRUPTED",
    "INTERRUPTED_DRAFT",
    "MAX_INPUT_CHARS",
    "MEMORY_RECENT_LINES",
    "SystemClock",
    "TavernService",
]


class TavernService(TurnOps, FrontEndOps):
    """The turn workflow and everything else a front end asks for (see the module doc)."""

    async def respond(
        self,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
    ) -> ReplyView:
        """Record ``lines`` as one new floor (speakers named by their personas), generate and
        commit the reply; refused while the session is closed."""
        ids = await self._session(key)
        await self._refuse_closed(key, ids)
        lines = await self._as_personas(ids, lines)
        return await super().respond(key, branch, lines, on_text=on_text)

    async def regenerate(
        self, key: SessionKey, branch: str, *, on_text: OnText | None = None
    ) -> ReplyView:
        """Add a page to the branch's latest floor; refused while the session is closed."""
        await self._refuse_closed(key, await self._session(key))
        return await super().regenerate(key, branch, on_text=on_text)

    async def continue_reply(
        self, key: SessionKey, branch: str, *, on_text: OnText | None = None
    ) -> ReplyView:
        """Extend the latest reply on a new page; refused while the session is closed."""
        await self._refuse_closed(key, await self._session(key))
        return await super().continue_reply(key, branch, on_text=on_text)

    async def start(self, *, only: SessionKey | None = None) -> list[Floor]:
        """Take this process's lease, then recover from a crash: floors left draft or
        generating and pages left pending fail (a committed floor keeps its active page) when
        the process that owned them is dead; a live process's turns are left alone (see
        :mod:`engine.timeline.leases`). ``only`` limits this, and every later
        :meth:`sweep`, to one session (``tavernbot chat``)."""
        # Loading the tokenizer tables takes seconds of CPU: do it on a worker thread now,
        # not on the event loop during the first turn.
        model = self.default_profile.model
        await asyncio.to_thread(lambda: counter_for_model(model).count("warm up"))
        await self.leases.renew()
        self._recover_only = only
        return await self.sweep()

    async def sweep(self) -> list[Floor]:
        """Fail the turns dead processes left in progress (in the session :meth:`start` was
        limited to, if any); the heartbeat runs this after each renewal."""
        only = self._recover_only
        session_id: int | None = None
        if only is not None:
            found = await self.timeline.find_session(only.platform, only.key)
            if found is None:
                return []
            session_id = found.id
        return await self.timeline.recover(self.leases, session_id=session_id)

    async def keep_lease(self) -> None:
        """Renew this process's lease and sweep for dead processes' turns until cancelled
        (the application runs it in a task it owns)."""
        await self.leases.keep(self.sweep)

    async def release_lease(self) -> None:
        """Give the lease up on a clean stop (after the last turn of this process ended)."""
        await self.leases.release()

    async def greet(
        self, key: SessionKey, branch: str = MAIN_BRANCH, *, user_name: str = "User"
    ) -> ReplyView | None:
        """Open an empty branch with the character's greeting(s) as floor 1 (see
        :mod:`engine.turns.greeting`); None when there is nothing to greet with."""
        return await greet(self, key, branch, user_name=user_name)

    async def edit_and_regenerate(
        self,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
    ) -> ReplyView:
        """Answer an edited version of the latest floor's input. Floors are frozen, so the
        edit goes to a new branch forked before that floor (named ``<branch>-edit-<n>``); the
        original floor, its pages and its variable writes stay where they were."""
        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        latest = await self.history_service.latest_floor(target.id)
        if latest is None or latest.state != "committed":
            raise NothingToDoError(f"branch {branch!r} has no answered message to edit")
        taken = {b.name for b in await self.timeline.branches(ids.session_id)}
        name, n = f"{branch}-edit-{latest.seq}", 1
        while name in taken:
            n += 1
            name = f"{branch}-edit-{latest.seq}-{n}"
        await self.fork(key, branch, after_floor=latest.seq - 1, name=name)
        return await self.respond(key, name, lines, on_text=on_text)
