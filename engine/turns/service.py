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
from engine.timeline.service import INTERRUPTED
from engine.timeline.values import MAIN_BRANCH, Floor
from engine.turns.api import OnText, ReplyView, SessionKey, UserLine
from engine.turns.base import MAX_INPUT_CHARS, MEMORY_RECENT_LINES, SystemClock
from engine.turns.errors import NothingToDoError
from engine.turns.front_ops import FrontEndOps
from engine.turns.greeting import greet
from engine.turns.turn_ops import TurnOps

INTERRUPTED_DRAFT = "interrupted: the process stopped before this floor was generated"

__all__ = ["MAX_INPUT_CHARS", "MEMORY_RECENT_LINES", "SystemClock", "TavernService"]


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
        """Recover from a crash: floors left draft or generating and pages left pending fail
        (a committed floor keeps its active page). ``only`` limits this to one session, for a
        second process (``tavernbot chat``) that must not fail turns the bot is running."""
        # Loading the tokenizer tables takes seconds of CPU: do it on a worker thread now,
        # not on the event loop during the first turn.
        model = self.default_profile.model
        await asyncio.to_thread(lambda: counter_for_model(model).count("warm up"))
        if only is None:
            failed = await self.timeline.recover()
            async with self.storage.unit_of_work() as uow:
                drafts = await uow.floors.in_state("draft")
            for floor in drafts:
                failed.append(await self.timeline.fail_floor(floor.id, INTERRUPTED_DRAFT))
            return failed
        return await self._recover_session(only)

    async def _recover_session(self, key: SessionKey) -> list[Floor]:
        async with self.storage.unit_of_work() as uow:
            session = await uow.sessions.find(key.platform, key.key)
            if session is None:
                return []
            branch_ids = {b.id for b in await uow.branches.list(session.id)}
            floors = [
                f
                for state in ("draft", "generating")
                for f in await uow.floors.in_state(state)
                if f.branch_id in branch_ids
            ]
            pending = []
            for page in await uow.pages.in_status("pending"):
                ctx = await uow.pages.context(page.id)
                if ctx.branch.id in branch_ids and ctx.floor.state == "committed":
                    pending.append(page)
        failed = [await self.timeline.fail_floor(f.id, INTERRUPTED) for f in floors]
        for page in pending:
            await self.timeline.fail_page(page.id, INTERRUPTED)
        return failed

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
