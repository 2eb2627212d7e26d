"""Turns of :class:`~engine.turns.service.TavernService`: respond, regenerate, continue and
swipe, with the failure path and the memory steps (see :mod:`engine.turns.service`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from engine.errors import EngineError, InternalError, LimitExceededError, NotFoundError
from engine.incidents import TURN_FAILED, internal_error
from engine.memory.lineage import Viewpoint
from engine.memory.scoping import viewpoint_for
from engine.ports import UnitOfWork
from engine.prompt.inputs import MemoryItem
from engine.prompt.regex_budget import RegexBudget
from engine.timeline.errors import BranchBusyError, TimelineNotFoundError
from engine.timeline.service import MAX_INPUTS_PER_FLOOR, OpenedFloor, open_generating
from engine.timeline.values import (
    Branch,
    Floor,
    NewMessage,
    Page,
    PageContext,
    Session,
)
from engine.turns.api import OnText, ReplyView, SessionKey, UserLine
from engine.turns.base import (
    MAX_INPUT_CHARS,
    MEMORY_BUDGET,
    ServiceBase,
    SessionIds,
    session_stages,
)
from engine.turns.context import (
    SessionAssets,
    TurnRead,
    card_fields,
    load_assets,
    read_turn,
    stored_inputs,
)
from engine.turns.errors import NothingToDoError, TurnFailedError
from engine.turns.options import TOOLS_SETTING, memory_enabled
from engine.turns.profiles import (
    ProfileSnapshot,
)
from engine.turns.tools import TOOLS_GLOBAL_WRITES, ToolBox, ToolEnv, ToolPolicy
from engine.turns.views import committed_numbers, reply_view
from engine.turns.workflow import Generation, TurnOptions, generation_error

log = logging.getLogger(__name__)

_Opened = tuple[Branch, OpenedFloor, TurnRead]
"""A respond's branch, its new generating floor and page, and what the turn read."""


class TurnOps(ServiceBase):
    """Generating, committing and swiping pages."""

    async def respond(
        self,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
    ) -> ReplyView:
        """Record ``lines`` as one new floor, generate and commit the reply."""
        if not lines:
            raise NothingToDoError("there is no message to answer")
        for line in lines:
            if len(line.text) > MAX_INPUT_CHARS:
                raise TurnFailedError(
                    f"a message of {len(line.text)} characters is over MAX_INPUT_CHARS="
                    f"{MAX_INPUT_CHARS}"
                )
        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        inputs = [
            NewMessage(
                role="user",
                raw=line.text,
                speaker_id=line.speaker.id,
                speaker_name=line.speaker.name,
                platform_ref=line.ref,
            )
            for line in lines
        ]
        # One total for the turn's regex work: the input's store run, then the assembly.
        regex_budget = RegexBudget()
        async with self.locks.hold(ids.session_id, branch):
            floor: Floor | None = None
            page: Page | None = None
            try:
                check_inputs(inputs)
                # One unit of work reads the session, its branches and assets, stores the
                # inputs (once the session's regex scripts are known) on a new floor that is
                # already generating with its page 1, and reads everything the turn needs.
                opened: _Opened | None = None
                async with self.storage.unit_of_work() as uow:
                    session, branches = await uow.sessions.get_with_branches(ids.session_id)
                    assets = await load_assets(uow, session)
                    if not assets.scripts:
                        opened = await self._open(uow, session, branches, target, assets, inputs)
                if opened is None:
                    # The input's store run may take the turn's whole regex budget: it runs in
                    # a worker thread with no transaction open (on SQLite one writer lock
                    # serves every session), and a second unit of work opens the floor.
                    inputs = await stored_inputs(inputs, assets.scripts, regex_budget)
                    async with self.storage.unit_of_work() as uow:
                        session, branches = await uow.sessions.get_with_branches(ids.session_id)
                        opened = await self._open(uow, session, branches, target, assets, inputs)
                current, new, read = opened
                floor, page = new.floor, new.page
                self._emit("floor.created", branch_id=target.id, floor=floor.seq)
                self._emit("floor.stateChanged", floor_id=floor.id, state="generating")
                for message in inputs:
                    self._emit(
                        "message.appended",
                        session=key.key,
                        branch=branch,
                        floor=floor.seq,
                        role="user",
                        text=message.raw,
                    )
                known = PageContext(
                    page=page, floor=floor, branch=current, realm_id=session.realm_id
                )
                return await self._run(
                    key,
                    ids,
                    target,
                    floor,
                    page,
                    "respond",
                    on_text,
                    read=read,
                    known=known,
                    regex_budget=regex_budget,
                )
            except BaseException as exc:
                if floor is None and _records_a_failed_floor(exc):
                    # The unit that opens the floor rolled back: keep a failed floor as the
                    # record of the turn, as when the floor was opened in a unit of its own
                    # (only a busy or missing branch left no floor then).
                    floor = await self._record_failed_open(target.id, inputs)
                raise await self._failed(floor, page, exc) from exc

    async def _open(
        self,
        uow: UnitOfWork,
        session: Session,
        branches: Sequence[Branch],
        target: Branch,
        assets: SessionAssets,
        inputs: Sequence[NewMessage],
    ) -> _Opened:
        """Inside ``uow``: the new generating floor with ``inputs``, and the turn's read."""
        current = next((b for b in branches if b.id == target.id), None)
        if current is None:
            raise TimelineNotFoundError(f"branch {target.name!r} no longer exists")
        new = await open_generating(uow, current, branches, inputs, owner=self.timeline.owner)
        read = await read_turn(
            uow,
            session=session,
            floor=new.floor,
            mode="respond",
            assets=assets,
            branches=branches,
        )
        return current, new, read

    async def _record_failed_open(
        self, branch_id: int, inputs: Sequence[NewMessage]
    ) -> Floor | None:
        """The failed turn's floor with the user's input (the input is part of the chat
        even though no reply came); without it only if the input itself cannot be stored."""
        for kept in (inputs, ()):
            try:
                return await self.timeline.open_floor(branch_id, kept)
            except EngineError:
                log.exception("could not record the failed turn")
        return None

    async def regenerate(
        self, key: SessionKey, branch: str, *, on_text: OnText | None = None
    ) -> ReplyView:
        """Add a page to the branch's latest floor by re-running its whole turn; on a failed
        latest floor this is the retry of its input (the floor keeps its number)."""
        return await self._again(key, branch, "regenerate", on_text)

    async def continue_reply(
        self, key: SessionKey, branch: str, *, on_text: OnText | None = None
    ) -> ReplyView:
        """Add a page to the latest floor that extends its active reply (SillyTavern's
        Continue): the new page holds the old text followed by the continuation."""
        return await self._again(key, branch, "continue", on_text)

    async def _again(
        self, key: SessionKey, branch: str, mode: str, on_text: OnText | None
    ) -> ReplyView:
        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        async with self.locks.hold(ids.session_id, branch):
            latest = await self.history_service.newest_floor(target.id)
            if latest is not None and latest.state == "failed" and mode != "regenerate":
                raise NothingToDoError(
                    f"floor {latest.seq} of branch {branch!r} failed and has no reply to "
                    f"{mode}; regenerate retries it"
                )
            # A failed latest floor is retried: a new page for its own input (issue 12).
            if latest is None or latest.state not in ("committed", "failed"):
                raise NothingToDoError(f"branch {branch!r} has no reply of its own to {mode} yet")
            previous = ""
            if mode == "continue":
                view = await self.history_service.floor_view(target.id, latest.seq)
                previous = "".join(m.raw for m in view.replies)
            page: Page | None = None
            try:
                page = await self.timeline.add_page(latest.id)
                return await self._run(
                    key, ids, target, latest, page, mode, on_text, previous_text=previous
                )
            except BaseException as exc:
                raise await self._failed(None, page, exc) from exc

    async def _run(
        self,
        key: SessionKey,
        ids: SessionIds,
        branch: Branch,
        floor: Floor,
        page: Page,
        mode: str,
        on_text: OnText | None,
        *,
        read: TurnRead | None = None,
        previous_text: str = "",
        known: PageContext | None = None,
        regex_budget: RegexBudget | None = None,
    ) -> ReplyView:
        if read is None:
            async with self.storage.unit_of_work() as uow:
                session = await uow.sessions.get(ids.session_id)
                read = await read_turn(uow, session=session, floor=floor, mode=mode)
        session = read.session
        settings = session.settings
        snapshot = self._snapshot(session, read.assets.profiles)
        stages = session_stages(settings)
        remember = memory_enabled(settings)
        view = viewpoint_for(session, branch, read.branches, floor.seq) if self.memory else None
        memory_items: tuple[MemoryItem, ...] = ()
        if self.memory is not None and view is not None and "memory_retrieval" in stages:
            memory_items = await self._retrieve(view, read, settings.extra.get(MEMORY_BUDGET))
        options = TurnOptions(
            mode=mode,
            prompt_mode=settings.prompt_mode,
            macro_mode=settings.macro_mode,
            stages=stages,
            snapshot=snapshot,
            previous_text=previous_text,
            seed=f"{session.id}:{branch.id}:{floor.seq}:{page.number}",
            memory=memory_items,
            memory_after_commit=self.memory is not None,
            keep_summaries=remember,
            persona=await self._persona_description(ids.realm_id, read.user_id),
        )
        tools = ToolBox(
            # Tools are offered only when the session's tools option is on (off by default:
            # many OpenAI-compatible servers refuse tool definitions).
            ToolPolicy.from_json(
                settings.extra.get(TOOLS_SETTING),
                default_enabled=False,
                allow_global=settings.extra.get(TOOLS_GLOBAL_WRITES) is True,
            ),
            ToolEnv(
                state=read.state,
                staged=[],
                card=card_fields(read.assets),
                clock=self.clock,
                random=self.rng,
                memory=self.memory.query_tool(view) if self.memory and view else None,
            ),
        )
        where = {
            "session": key.key,
            "branch": branch.name,
            "floor": floor.seq,
            "page": page.number,
        }
        generated = await Generation(
            read,
            options,
            model_for=self.model_for,
            tools=tools,
            events=self.events,
            on_text=on_text,
            where=where,
            regex_budget=regex_budget,
        ).run()
        character = read.assets.character.name
        reply = NewMessage(
            role="assistant", raw=generated.raw, display=generated.display, speaker_name=character
        )
        await self.timeline.commit_page(
            page.id, messages=[reply], writes=generated.writes, meta=generated.meta, known=known
        )
        self._emit("message.appended", **where, role="assistant", text=generated.display)
        if self.memory is not None and view is not None and "memory_agent" in stages:
            self._after_commit(view, read, generated.display, generated.meta, snapshot)
        pages = active = 1
        if mode != "respond":
            # The page is committed: nothing after this point may fail the turn.
            try:
                numbers = committed_numbers(await self.history_service.pages(floor.id))
                pages, active = len(numbers), numbers.index(page.number) + 1
            except (EngineError, ValueError):
                log.exception("could not count the pages of floor %s", floor.seq)
                pages = active = page.number
        return ReplyView(
            session=key,
            branch=branch.name,
            floor=floor.seq,
            page=active,
            pages=pages,
            text=generated.display,
            character=character,
        )

    def _after_commit(
        self,
        view: Viewpoint,
        read: TurnRead,
        reply: str,
        meta: Mapping[str, Any],
        snapshot: ProfileSnapshot,
    ) -> None:
        """Step 8 after the commit, in an owned task: the memory agent (or the summary tags)
        stores what the turn taught; it never fails the committed turn."""
        memory = self.memory
        assert memory is not None
        profile = snapshot.profile("memory")
        summaries = [str(item.get("text", "")) for item in meta.get("summaries", ())]

        async def work() -> None:
            try:
                await memory.after_commit(
                    view,
                    user_text=read.user_input or "",
                    reply_text=reply,
                    tag_summaries=summaries,
                    model=self.model_for(profile),
                    model_name=profile.model,
                )
            except Exception:  # memory must never break the conversation
                log.exception("memory after commit failed")

        task = asyncio.get_running_loop().create_task(work(), name="memory-after-commit")
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

    async def _failed(
        self, floor: Floor | None, page: Page | None, exc: BaseException
    ) -> BaseException:
        """Mark the page (and a new floor) failed; the error to raise to the caller.

        An unexpected error (not an :class:`EngineError`) is logged under an error id here and
        only ``"the turn failed (error <id>)"`` is stored and raised: its own text may hold SQL,
        parameters or credentials.
        """
        incident: InternalError | None = None
        if isinstance(exc, Exception) and not isinstance(exc, EngineError):
            incident = internal_error(exc, TURN_FAILED, logger=log)
        message = generation_error(incident or exc)
        try:
            if page is not None:
                await asyncio.shield(self.timeline.fail_page(page.id, message))
            elif floor is not None and floor.state in ("draft", "generating"):
                await asyncio.shield(self.timeline.fail_floor(floor.id, message))
        except EngineError:
            log.exception("could not mark the turn failed")
        self._emit(
            "generation.failed",
            floor=floor.seq if floor is not None else None,
            error=message,
        )
        if incident is not None:
            return TurnFailedError(message)
        return exc

    async def swipe(self, key: SessionKey, branch: str, step: int) -> ReplyView:
        """Activate the page ``step`` away on the latest floor (clamped to the first/last)."""
        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        async with self.locks.hold(ids.session_id, branch):
            latest = await self.history_service.latest_floor(target.id)
            if latest is None or latest.state != "committed":
                raise NothingToDoError(f"branch {branch!r} has no reply of its own to swipe")
            pages = [
                p for p in await self.history_service.pages(latest.id) if p.status == "committed"
            ]
            numbers = [p.number for p in pages]
            index = numbers.index(latest.active_page) if latest.active_page in numbers else 0
            chosen = max(0, min(len(numbers) - 1, index + step))
            await self.timeline.activate_page(latest.id, numbers[chosen])
            view = await self.history_service.floor_view(target.id, latest.seq)
        return reply_view(key, view)


def _records_a_failed_floor(exc: BaseException) -> bool:
    return isinstance(exc, Exception) and not isinstance(
        exc, BranchBusyError | NotFoundError | LimitExceededError
    )


def check_inputs(inputs: Sequence[NewMessage]) -> None:
    """The timeline's bound on the messages one floor collects."""
    if len(inputs) > MAX_INPUTS_PER_FLOOR:
        raise LimitExceededError(
            f"{len(inputs)} input messages on one floor (at most {MAX_INPUTS_PER_FLOOR})",
            limit="MAX_INPUTS_PER_FLOOR",
            value=MAX_INPUTS_PER_FLOOR,
        )
