"""Turns: respond, regenerate, continue and edit-and-regenerate (see
:mod:`engine.turns.service` for the steps of a turn). One turn at a time per branch
(:class:`~engine.turns.locks.BranchLocks`); a failure is recorded by
:class:`~engine.turns.failures.TurnFailures`."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Final

from engine.errors import EngineError, LimitExceededError
from engine.memory.scoping import viewpoint_for
from engine.ports import Clock, EventSink, RandomSource, Storage, UnitOfWork
from engine.prompt.inputs import MemoryItem
from engine.prompt.regex_budget import RegexBudget
from engine.timeline.checks import check_inputs
from engine.timeline.errors import TimelineNotFoundError
from engine.timeline.history import HistoryService
from engine.timeline.opening import OpenedFloor, open_generating
from engine.timeline.service import TimelineService
from engine.timeline.values import Branch, Floor, NewMessage, Page, PageContext, Session
from engine.turns.api import OnReply, OnSpeaker, OnText, ReplyView, SessionKey, UserLine
from engine.turns.branches import Branches
from engine.turns.context import TurnRead, read_turn, stored_inputs
from engine.turns.earlier import own_floor
from engine.turns.errors import NothingToDoError, SessionClosedError
from engine.turns.events import emit
from engine.turns.failures import TurnFailures, records_a_failed_floor
from engine.turns.group_turns import GroupTurns
from engine.turns.locks import BranchOrder
from engine.turns.memory_access import MemoryAccess
from engine.turns.options import MEMORY_BUDGET, TOOLS_SETTING, memory_enabled, session_stages
from engine.turns.parsed_assets import SessionAssets, assets_from, assets_wanted, card_fields
from engine.turns.personas import Personas, name_lines, persona_pairs
from engine.turns.profile_store import ProfileStore
from engine.turns.sessions import SessionIds, Sessions
from engine.turns.tool_builtins import ToolEnv
from engine.turns.tools import TOOLS_GLOBAL_WRITES, ToolBox, ToolPolicy
from engine.turns.turn_prompt import TurnOptions
from engine.turns.views import committed_numbers
from engine.turns.workflow import Generation, ModelFor

__all__ = ["MAX_INPUT_CHARS", "Turns"]

log = logging.getLogger(__name__)

MAX_INPUT_CHARS: Final = 32_000
"""One user message longer than this is refused (LimitExceededError, no floor is kept)."""

_Opened = tuple[Branch, OpenedFloor, TurnRead]
"""A respond's branch, its new generating floor and page, and what the turn read."""


def _inputs(lines: Sequence[UserLine]) -> list[NewMessage]:
    """The floor's input messages of ``lines``."""
    return [
        NewMessage(
            role="user",
            raw=line.text,
            speaker_id=line.speaker.id,
            speaker_name=line.speaker.name,
            platform_ref=line.ref,
        )
        for line in lines
    ]


class Turns:
    """Generating and committing pages of a session's branches."""

    def __init__(
        self,
        storage: Storage,
        sessions: Sessions,
        timeline: TimelineService,
        history: HistoryService,
        *,
        locks: BranchOrder,
        branches: Branches,
        personas: Personas,
        profiles: ProfileStore,
        memory: MemoryAccess,
        failures: TurnFailures,
        model_for: ModelFor,
        events: EventSink,
        clock: Clock,
        rng: RandomSource,
    ) -> None:
        self._storage = storage
        self._sessions = sessions
        self._timeline = timeline
        self._history = history
        self._locks = locks
        self._branches = branches
        self._personas = personas
        self._profiles = profiles
        self._memory = memory
        self._failures = failures
        self._model_for = model_for
        self._events = events
        self._clock = clock
        self._rng = rng
        self._group = GroupTurns(
            self, storage, timeline, failures=failures, events=events, rng=rng
        )

    async def respond(
        self,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
        on_speaker: OnSpeaker | None = None,
        on_reply: OnReply | None = None,
        called: Sequence[str] = (),
    ) -> ReplyView:
        """Record ``lines`` as one new floor (speakers named by their personas), generate and
        commit the reply; refused while the session is closed. In a group session the members
        its strategy chooses (or the members ``called`` names) answer in turn
        (:class:`~engine.turns.group_turns.GroupTurns`): ``on_speaker`` is called before each
        reply streams, ``on_reply`` after each commits, and the last reply's view is
        returned. A solo session's one character answers whatever ``called`` says."""
        ids = await self._sessions.ids(key)
        if not lines:
            raise NothingToDoError("there is no message to answer")
        for line in lines:
            if len(line.text) > MAX_INPUT_CHARS:
                raise LimitExceededError(
                    f"a message of {len(line.text)} characters is over MAX_INPUT_CHARS="
                    f"{MAX_INPUT_CHARS}",
                    limit="MAX_INPUT_CHARS",
                    value=MAX_INPUT_CHARS,
                )
        target = await self._sessions.branch(ids.session_id, branch)
        inputs = _inputs(lines)
        # One total for the turn's regex work: the input's store run, then the assembly.
        regex_budget = RegexBudget()
        async with self._locks.hold(ids.session_id, branch):
            floor: Floor | None = None
            page: Page | None = None
            grouped = False
            try:
                check_inputs(inputs, where=f"branch {branch!r}")
                # One unit of work reads the session (refused while closed), its branches,
                # the speakers' personas (they name the lines) and the assets, stores the
                # inputs (once the session's regex scripts are known) on a new floor that is
                # already generating with its page 1, and reads everything the turn needs.
                opened: _Opened | None = None
                async with self._storage.unit_of_work() as uow:
                    session, branches = await uow.sessions.get_with_branches(ids.session_id)
                    self._sessions.refuse(key, session)
                    wanted = assets_wanted(session) + persona_pairs(lines)
                    rows = await uow.assets.get_many(session.realm_id, wanted)
                    found = {(a.kind, a.name): a for a in rows}
                    named, personas = name_lines(lines, found)
                    inputs = _inputs(named)
                    assets = assets_from(session, found)
                    if not assets.scripts and assets.settings is None:
                        opened = await self._open(
                            uow, session, branches, target, assets, inputs, personas
                        )
                if assets.settings is not None:
                    # A group: each reply is its own floor, recorded (and failed) on its own.
                    grouped = True
                    return await self._group.respond(
                        key,
                        ids,
                        target,
                        assets,
                        await stored_inputs(inputs, assets.scripts, regex_budget),
                        regex_budget=regex_budget,
                        on_text=on_text,
                        on_speaker=on_speaker,
                        on_reply=on_reply,
                        called=called,
                    )
                if opened is None:
                    # The input's store run may take the turn's whole regex budget: it runs in
                    # a worker thread with no transaction open (on SQLite one writer lock
                    # serves every session), and a second unit of work opens the floor.
                    inputs = await stored_inputs(inputs, assets.scripts, regex_budget)
                    async with self._storage.unit_of_work() as uow:
                        session, branches = await uow.sessions.get_with_branches(ids.session_id)
                        opened = await self._open(
                            uow, session, branches, target, assets, inputs, personas
                        )
                current, new, read = opened
                floor, page = new.floor, new.page
                emit(self._events, "floor.created", branch_id=target.id, floor=floor.seq)
                emit(self._events, "floor.stateChanged", floor_id=floor.id, state="generating")
                for message in inputs:
                    emit(
                        self._events,
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
                return await self.run_reply(
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
                if grouped or isinstance(exc, SessionClosedError):
                    # A group records its own failures; a closed session refuses the turn
                    # before anything is stored (no floor, no failure event).
                    raise
                if floor is None and records_a_failed_floor(exc):
                    # The unit that opens the floor rolled back: keep a failed floor as the
                    # record of the turn, as when the floor was opened in a unit of its own
                    # (only a busy or missing branch left no floor then).
                    floor = await self._failures.record_failed_open(target.id, inputs)
                raise await self._failures.failed(floor, page, exc) from exc

    async def _open(
        self,
        uow: UnitOfWork,
        session: Session,
        branches: Sequence[Branch],
        target: Branch,
        assets: SessionAssets,
        inputs: Sequence[NewMessage],
        personas: Mapping[str, str],
    ) -> _Opened:
        """Inside ``uow``: the new generating floor with ``inputs``, and the turn's read
        (``personas``: the inputs' speakers' descriptions, already read in ``uow``)."""
        current = next((b for b in branches if b.id == target.id), None)
        if current is None:
            raise TimelineNotFoundError(f"branch {target.name!r} no longer exists")
        new = await open_generating(uow, current, branches, inputs, owner=self._timeline.owner)
        read = await read_turn(
            uow,
            session=session,
            floor=new.floor,
            mode="respond",
            assets=assets,
            branches=branches,
            personas=personas,
        )
        return current, new, read

    async def speak(
        self,
        key: SessionKey,
        branch: str,
        name: str,
        *,
        on_text: OnText | None = None,
        on_reply: OnReply | None = None,
    ) -> ReplyView:
        """The character ``name`` answers now, on a new floor with no input (``/group speak``);
        NotFoundError naming the session's characters. Refused while the session is closed."""
        ids = await self._sessions.refuse_closed(key)
        target = await self._sessions.branch(ids.session_id, branch)
        async with self._locks.hold(ids.session_id, branch):
            return await self._group.speak(
                key, ids, target, name, on_text=on_text, on_reply=on_reply
            )

    async def regenerate(
        self,
        key: SessionKey,
        branch: str,
        *,
        floor: int | None = None,
        on_text: OnText | None = None,
    ) -> ReplyView:
        """Add a page to the branch's latest floor by re-running its whole turn; on a failed
        latest floor this is the retry of its input (the floor keeps its number). ``floor``:
        an earlier member's reply of the latest group turn instead (None: the latest floor);
        its prompt is the story up to that floor, with its speaker, and the replies after it
        keep their pages (:mod:`engine.timeline.earlier` says when it is refused). Refused
        while the session is closed."""
        return await self._again(key, branch, "regenerate", on_text, floor=floor)

    async def continue_reply(
        self, key: SessionKey, branch: str, *, on_text: OnText | None = None
    ) -> ReplyView:
        """Add a page to the latest floor that extends its active reply (SillyTavern's
        Continue): the new page holds the old text followed by the continuation. Refused
        while the session is closed."""
        return await self._again(key, branch, "continue", on_text)

    async def edit_and_regenerate(
        self,
        key: SessionKey,
        branch: str,
        lines: Sequence[UserLine],
        *,
        on_text: OnText | None = None,
    ) -> ReplyView:
        """Answer an edited version of the latest floor's input (in a group, of the input
        the latest turn answered). Floors are frozen, so the edit goes to a new branch forked
        before that floor (named ``<branch>-edit-<n>``); the original floor, its pages and its
        variable writes stay where they were."""
        ids, target = await self._sessions.target(key, branch)
        latest = await self._history.latest_floor(target.id)
        if latest is None or latest.state != "committed":
            raise NothingToDoError(f"branch {branch!r} has no answered message to edit")
        while latest.speaker is not None and latest.seed is None and latest.seq > 1:
            # A group's further reply (or a called member's) holds no input: the message
            # edited is the one its turn answered, on an earlier floor.
            latest = (await self._history.floor_view(target.id, latest.seq - 1)).floor
        taken = {b.name for b in await self._timeline.branches(ids.session_id)}
        name, n = f"{branch}-edit-{latest.seq}", 1
        while name in taken:
            n += 1
            name = f"{branch}-edit-{latest.seq}-{n}"
        await self._branches.fork(key, branch, after_floor=latest.seq - 1, name=name)
        return await self.respond(key, name, lines, on_text=on_text)

    async def _again(
        self,
        key: SessionKey,
        branch: str,
        mode: str,
        on_text: OnText | None,
        *,
        floor: int | None = None,
    ) -> ReplyView:
        ids = await self._sessions.refuse_closed(key)
        target = await self._sessions.branch(ids.session_id, branch)
        async with self._locks.hold(ids.session_id, branch):
            latest = await self._history.newest_floor(target.id)
            if floor is not None and (latest is None or latest.seq != floor):
                latest = await own_floor(self._history, target, floor, mode)
            if latest is not None and latest.state == "failed" and mode != "regenerate":
                raise NothingToDoError(
                    f"floor {latest.seq} of branch {branch!r} failed and has no reply to "
                    f"{mode}; regenerate retries it"
                )
            if latest is not None and latest.hidden:
                # /del hid it: it is out of the story, so it takes no new page either.
                raise NothingToDoError(
                    f"floor {latest.seq} of branch {branch!r} is hidden; nothing to {mode}"
                )
            # A failed latest floor is retried: a new page for its own input (issue 12).
            if latest is None or latest.state not in ("committed", "failed"):
                raise NothingToDoError(f"branch {branch!r} has no reply of its own to {mode} yet")
            if latest.speaker is None and latest.seed is not None:
                # Only a group turn nobody answered has a seed and no speaker.
                raise NothingToDoError(
                    f"nobody answered floor {latest.seq} of branch {branch!r}; "
                    "make a character speak to answer it"
                )
            previous = ""
            if mode == "continue":
                view = await self._history.floor_view(target.id, latest.seq)
                previous = "".join(m.raw for m in view.replies)
            page: Page | None = None
            try:
                page = await self._timeline.add_page(latest.id)
                return await self.run_reply(
                    key, ids, target, latest, page, mode, on_text, previous_text=previous
                )
            except BaseException as exc:
                raise await self._failures.failed(None, page, exc) from exc

    async def run_reply(
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
        """Generate the page's reply (outside any transaction) and commit it; the card is
        the floor's speaker's in a group (read with the turn)."""
        if read is None:
            async with self._storage.unit_of_work() as uow:
                session = await uow.sessions.get(ids.session_id)
                read = await read_turn(uow, session=session, floor=floor, mode=mode)
        session = read.session
        settings = session.settings
        snapshot = self._profiles.snapshot(session, read.assets.profiles)
        stages = session_stages(settings)
        memory = self._memory.service
        view = viewpoint_for(session, branch, read.branches, floor.seq) if memory else None
        memory_items: tuple[MemoryItem, ...] = ()
        if view is not None and "memory_retrieval" in stages:
            budget = settings.extra.get(MEMORY_BUDGET)
            memory_items = await self._memory.retrieve(view, read, budget)
        options = TurnOptions(
            mode=mode,
            prompt_mode=settings.prompt_mode,
            macro_mode=settings.macro_mode,
            stages=stages,
            snapshot=snapshot,
            previous_text=previous_text,
            seed=f"{session.id}:{branch.id}:{floor.seq}:{page.number}",
            memory=memory_items,
            memory_after_commit=memory is not None,
            keep_summaries=memory_enabled(settings),
            persona=read.persona,
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
                clock=self._clock,
                random=self._rng,
                memory=memory.query_tool(view) if memory and view else None,
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
            model_for=self._model_for,
            tools=tools,
            events=self._events,
            on_text=on_text,
            where=where,
            regex_budget=regex_budget,
        ).run()
        character = read.assets.character.name
        reply = NewMessage(
            role="assistant", raw=generated.raw, display=generated.display, speaker_name=character
        )
        await self._timeline.commit_page(
            page.id,
            messages=[reply],
            writes=generated.writes,
            meta=generated.meta,
            known=known,
            itemization=generated.itemization,
        )
        emit(self._events, "message.appended", **where, role="assistant", text=generated.display)
        if view is not None and "memory_agent" in stages:
            self._memory.after_commit(view, read, generated.display, generated.meta, snapshot)
        pages = active = 1
        if mode != "respond":
            # The page is committed: nothing after this point may fail the turn.
            try:
                numbers = committed_numbers(await self._history.pages(floor.id))
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
