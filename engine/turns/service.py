"""``TavernService``: the engine's :class:`~engine.turns.api.RoleplayService`, on the ports.

A turn (DESIGN.md section 6, seed 003 section 7), with short transactions only::

    1  record the input on a new draft floor, move it to generating, add page 1   (timeline)
       read what the turn needs: assets, recent chat, variables, timed state       (one unit)
    2-8  director, memory retrieval, assembly, narrator (streamed, tools), summary
       tags, regex scripts, verifier                                                (no unit)
    9  commit the page: messages, staged writes, meta; floor committed             (one unit)

Any failure fails the page (and a new floor with it), drops the staged writes and raises an
:class:`~engine.errors.EngineError` for the front end; the branch takes the next message.
One turn at a time per branch (:class:`~engine.turns.locks.BranchLocks`). Swipes, forks,
variables, imports and exports are here too; imports and exports live in
:mod:`engine.turns.transfer`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final

from engine.errors import EngineError, NotFoundError
from engine.macros import evaluate
from engine.memory.lineage import Viewpoint
from engine.memory.scoping import viewpoint_for
from engine.memory.service import MemoryService
from engine.ports import Clock, Event, EventSink, RandomSource, Storage
from engine.prompt.inputs import MemoryItem
from engine.prompt.macro_port import macro_context
from engine.prompt.tokens import counter_for_model
from engine.timeline.assets import AssetService
from engine.timeline.errors import StaleStateError, TimelineNotFoundError
from engine.timeline.history import HistoryService
from engine.timeline.service import TimelineService
from engine.timeline.values import (
    MAIN_BRANCH,
    Branch,
    Floor,
    NewMessage,
    Page,
    Session,
    SessionSettings,
)
from engine.turns.api import (
    AssetKind,
    BranchInfo,
    ImportSummary,
    OnText,
    PlatformRef,
    ReplyView,
    Scope,
    SessionInfo,
    SessionKey,
    UserLine,
    VariableWrite,
)
from engine.turns.context import (
    PROFILE_ASSET,
    PROFILE_ASSET_NAME,
    TurnRead,
    card_fields,
    read_turn,
)
from engine.turns.errors import NothingToDoError, TurnFailedError
from engine.turns.locks import BranchLocks
from engine.turns.profile_store import snapshot_for, with_binding, with_profile
from engine.turns.profiles import (
    COMPAT_STRICT,
    DEFAULT_ENABLED_SLOTS,
    SLOTS,
    BindingScope,
    LLMProfile,
    NoSecretCipher,
    ProfileBinding,
    ProfileSnapshot,
    SecretCipher,
    SlotPattern,
    stages_for_turn,
)
from engine.turns.tools import ToolBox, ToolEnv, ToolPolicy
from engine.turns.views import page_number, reply_view, shown_index, views_of
from engine.turns.workflow import Generation, ModelFor, TurnOptions, generation_error
from engine.variables import store
from engine.variables.service import VariableService

log = logging.getLogger(__name__)

MAX_INPUT_CHARS: Final = 32_000
"""One user message longer than this is refused."""
MEMORY_RECENT_LINES: Final = 6
"""Recent chat lines memory retrieval ranks relevance against (with the new message)."""


class SystemClock:
    """The wall clock (UTC)."""

    def now(self) -> datetime:
        """The current instant."""
        return datetime.now(UTC)


class _Null:
    def emit(self, event: Event) -> None:
        """Drop the event."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Ids:
    session_id: int
    realm_id: int


class TavernService:
    """The turn workflow and everything else a front end asks for (see the module doc)."""

    def __init__(
        self,
        storage: Storage,
        *,
        model_for: ModelFor,
        default_profile: LLMProfile,
        events: EventSink | None = None,
        clock: Clock | None = None,
        rng: RandomSource | None = None,
        cipher: SecretCipher | None = None,
        memory: MemoryService | None = None,
    ) -> None:
        self.storage = storage
        self.events: EventSink = events or _Null()
        self.timeline = TimelineService(storage, self.events)
        self.history_service = HistoryService(storage)
        self.variables_service = VariableService(storage)
        self.assets = AssetService(storage)
        self.model_for = model_for
        self.default_profile = default_profile
        self.clock: Clock = clock or SystemClock()
        self.rng: RandomSource = rng or random.Random()
        self.cipher: SecretCipher = cipher or NoSecretCipher()
        self.locks = BranchLocks()
        self.memory = memory
        # After-commit memory work runs in owned tasks so the reply is not held up by it.
        self._background: set[asyncio.Task[None]] = set()
        self._ids: dict[SessionKey, _Ids] = {}
        self._branches: dict[tuple[int, str], Branch] = {}

    def _emit(self, name: str, **payload: Any) -> None:
        self.events.emit(Event(name=name, payload=payload))

    async def start(self) -> list[Floor]:
        """Recover from a crash: floors left generating (or draft) and pending pages fail."""
        # Loading the tokenizer tables takes seconds of CPU: do it on a worker thread now,
        # not on the event loop during the first turn.
        model = self.default_profile.model
        await asyncio.to_thread(lambda: counter_for_model(model).count("warm up"))
        failed = await self.timeline.recover()
        async with self.storage.unit_of_work() as uow:
            drafts = await uow.floors.in_state("draft")
        for floor in drafts:
            failed.append(
                await self.timeline.fail_floor(floor.id, "interrupted before generating")
            )
        return failed

    # ------------------------------------------------------------------ sessions

    async def _session(self, key: SessionKey) -> _Ids:
        ids = self._ids.get(key)
        if ids is None:
            found = await self.timeline.find_session(key.platform, key.key)
            if found is None:
                raise TimelineNotFoundError(f"no session {key.platform}:{key.key}; start it first")
            ids = self._ids[key] = _Ids(session_id=found.id, realm_id=found.realm_id)
        return ids

    async def _branch(self, session_id: int, name: str) -> Branch:
        found = self._branches.get((session_id, name))
        if found is None:
            found = await self.timeline.branch(session_id, name)
            self._branches[(session_id, name)] = found
        return found

    async def _settings(self, session_id: int) -> Session:
        async with self.storage.unit_of_work() as uow:
            return await uow.sessions.get(session_id)

    async def _update(self, session_id: int, **changes: Any) -> Session:
        session = await self._settings(session_id)
        data = session.settings.to_json()
        data.update(changes)
        return await self.timeline.update_settings(session_id, SessionSettings.from_json(data))

    async def open_session(self, key: SessionKey, *, character: str | None = None) -> SessionInfo:
        """Get or create the session (and its realm and main branch)."""
        opened = await self.timeline.open_session(key.platform, key.realm, key.key)
        self._ids[key] = _Ids(session_id=opened.session.id, realm_id=opened.realm.id)
        if opened.created:
            self._emit("session.created", session_id=opened.session.id, key=key.key)
        if character is not None and opened.session.settings.character != character:
            await self._update(opened.session.id, character=character)
        return await self.session_info(key)

    async def session_info(self, key: SessionKey) -> SessionInfo:
        """Describe a session; NotFoundError when it does not exist."""
        ids = await self._session(key)
        async with self.storage.unit_of_work() as uow:
            session = await uow.sessions.get(ids.session_id)
            branches = await uow.branches.list(session.id)
            infos: list[BranchInfo] = []
            names = {b.id: b.name for b in branches}
            for branch in branches:
                head = await store.head_of(uow, await store.lineage_of(uow, branch))
                infos.append(
                    BranchInfo(
                        name=branch.name,
                        parent=names.get(branch.parent_id) if branch.parent_id else None,
                        fork_floor=branch.fork_floor,
                        floors=head,
                    )
                )
        s = session.settings
        return SessionInfo(
            key=key,
            character=s.character,
            preset=s.preset,
            worldbooks=tuple(s.worldbooks),
            branches=tuple(infos),
            prompt_mode=s.prompt_mode,
            macro_mode=s.macro_mode if s.macro_mode in ("full", "off") else "read_only",  # type: ignore[arg-type]
        )

    async def configure(self, key: SessionKey, **changes: Any) -> SessionInfo:
        """Change session settings: ``prompt_mode``, ``macro_mode``, ``character``, ``preset``,
        and extra keys such as ``slots`` (enabled instance slots) and ``tools`` (policy)."""
        ids = await self._session(key)
        await self._update(ids.session_id, **changes)
        return await self.session_info(key)

    # ------------------------------------------------------------------ turns

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
        async with self.locks.hold(ids.session_id, branch):
            floor: Floor | None = None
            page: Page | None = None
            try:
                floor = await self.timeline.open_floor(target.id, inputs)
                for message in inputs:
                    self._emit(
                        "message.appended",
                        session=key.key,
                        branch=branch,
                        floor=floor.seq,
                        role="user",
                        text=message.raw,
                    )
                # One unit of work moves the new floor to generating, adds its first page
                # and reads everything the turn needs.
                async with self.storage.unit_of_work() as uow:
                    if not await uow.floors.compare_and_set(
                        floor.id, expected="draft", state="generating"
                    ):
                        raise StaleStateError(f"floor {floor.seq} left draft before generating")
                    page = await uow.pages.add(floor_id=floor.id, number=1, meta={})
                    generating = replace(floor, state="generating")
                    session = await uow.sessions.get(ids.session_id)
                    read = await read_turn(uow, session=session, floor=generating, mode="respond")
                floor = generating
                self._emit("floor.stateChanged", floor_id=floor.id, state="generating")
                return await self._run(
                    key, ids, target, floor, page, "respond", on_text, read=read
                )
            except BaseException as exc:
                raise await self._failed(floor, page, exc) from exc

    async def regenerate(
        self, key: SessionKey, branch: str, *, on_text: OnText | None = None
    ) -> ReplyView:
        """Add a page to the branch's latest floor by re-running its whole turn."""
        return await self._again(key, branch, "regenerate", on_text)

    async def continue_reply(
        self, key: SessionKey, branch: str, *, on_text: OnText | None = None
    ) -> ReplyView:
        """Add a page to the latest floor that extends its active reply (SillyTavern's
        Continue): the new page holds the old text followed by the continuation."""
        return await self._again(key, branch, "continue", on_text)

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

    async def _again(
        self, key: SessionKey, branch: str, mode: str, on_text: OnText | None
    ) -> ReplyView:
        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        async with self.locks.hold(ids.session_id, branch):
            latest = await self.history_service.latest_floor(target.id)
            if latest is None or latest.state != "committed":
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
        ids: _Ids,
        branch: Branch,
        floor: Floor,
        page: Page,
        mode: str,
        on_text: OnText | None,
        *,
        read: TurnRead | None = None,
        previous_text: str = "",
    ) -> ReplyView:
        if read is None:
            async with self.storage.unit_of_work() as uow:
                session = await uow.sessions.get(ids.session_id)
                read = await read_turn(uow, session=session, floor=floor, mode=mode)
        session = read.session
        settings = session.settings
        snapshot = self._snapshot(session, read.assets.profiles)
        stages = stages_for_turn(settings.prompt_mode, _enabled_slots(settings))
        view = viewpoint_for(session, branch, read.branches, floor.seq) if self.memory else None
        memory_items: tuple[MemoryItem, ...] = ()
        if self.memory is not None and view is not None and "memory_retrieval" in stages:
            memory_items = await self._retrieve(view, read)
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
        )
        tools = ToolBox(
            ToolPolicy.from_json(
                settings.extra.get("tools"),
                default_enabled=settings.prompt_mode != COMPAT_STRICT,
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
        ).run()
        character = read.assets.character.name
        reply = NewMessage(
            role="assistant", raw=generated.raw, display=generated.display, speaker_name=character
        )
        await self.timeline.commit_page(
            page.id, messages=[reply], writes=generated.writes, meta=generated.meta
        )
        self._emit("message.appended", **where, role="assistant", text=generated.display)
        if self.memory is not None and view is not None and "memory_agent" in stages:
            self._after_commit(view, read, generated.display, generated.meta, snapshot)
        pages = 1
        active = 1
        if mode != "respond":
            numbers = [
                p.number
                for p in await self.history_service.pages(floor.id)
                if p.status == "committed"
            ]
            pages, active = len(numbers), numbers.index(page.number) + 1
        return ReplyView(
            session=key,
            branch=branch.name,
            floor=floor.seq,
            page=active,
            pages=pages,
            text=generated.display,
            character=character,
        )

    async def _retrieve(self, view: Viewpoint, read: TurnRead) -> tuple[MemoryItem, ...]:
        """Step 3: the memory block for this turn (none when memory cannot be read)."""
        assert self.memory is not None
        recent = [line.text for line in read.history[-MEMORY_RECENT_LINES:]]
        try:
            block = await self.memory.retrieve(view, read.user_input or "", recent_turns=recent)
        except EngineError as exc:
            log.warning("memory retrieval failed, the turn goes on without it: %s", exc)
            return ()
        if not block.text:
            return ()
        return (MemoryItem(id=",".join(block.record_ids) or "memory", text=block.text),)

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

    def _snapshot(self, session: Session, data: Mapping[str, Any]) -> ProfileSnapshot:
        return snapshot_for(
            data, session_id=session.id, realm_id=session.realm_id, default=self.default_profile
        )

    async def _failed(
        self, floor: Floor | None, page: Page | None, exc: BaseException
    ) -> BaseException:
        """Mark the page (and a new floor) failed; the error to raise to the caller."""
        message = generation_error(exc)
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
        if isinstance(exc, EngineError | asyncio.CancelledError):
            return exc
        if not isinstance(exc, Exception):
            return exc
        log.exception("turn failed", exc_info=exc)
        return TurnFailedError(f"the turn failed: {message}")

    # ------------------------------------------------------------------ swipes and forks

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

    async def fork(
        self, key: SessionKey, branch: str, *, after_floor: int | None, name: str
    ) -> BranchInfo:
        """Create branch ``name`` forking ``branch`` after ``after_floor`` (None: latest)."""
        ids = await self._session(key)
        source = await self._branch(ids.session_id, branch)
        created = await self.timeline.fork(source.id, name=name, after_floor=after_floor)
        return BranchInfo(
            name=created.name,
            parent=branch,
            fork_floor=created.fork_floor,
            floors=created.fork_floor or 0,
        )

    async def history(self, key: SessionKey, branch: str, *, limit: int = 50) -> list[ReplyView]:
        """The active pages along the branch, oldest first (hidden floors left out)."""
        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        floors = await self.history_service.history(target.id, limit=limit)
        return views_of(key, floors)

    # ------------------------------------------------------------------ variables

    async def variables(
        self, key: SessionKey, branch: str, scope: Scope | None = None
    ) -> dict[str, Any]:
        """The merged local view (scope None) or one scope, at the head of the branch."""
        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        state = await self.variables_service.state(target.id)
        return state.local() if scope is None else dict(state.scope(scope))

    async def set_variable(
        self, key: SessionKey, branch: str, name: str, value: Any, scope: Scope = "chat"
    ) -> None:
        """An explicit write to one scope."""
        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        await self.variables_service.set(target.id, scope, name, value)
        self._emit("variable.set", session=key.key, branch=branch, scope=scope, variable=name)

    async def delete_variable(
        self, key: SessionKey, branch: str, name: str, scope: Scope = "chat"
    ) -> None:
        """An explicit delete in one scope."""
        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        await self.variables_service.delete(target.id, scope, name)
        self._emit("variable.deleted", session=key.key, branch=branch, scope=scope, variable=name)

    async def variable_history(
        self, key: SessionKey, branch: str, name: str
    ) -> list[VariableWrite]:
        """Every write of ``name`` visible from the branch, oldest first."""
        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        return [
            VariableWrite(
                scope=e.scope, value=e.value, floor=e.floor, page=e.page, deleted=e.deleted
            )
            for e in await self.variables_service.history(target.id, name)
        ]

    # ------------------------------------------------------------------ platform messages

    async def link_message(self, key: SessionKey, platform_ref: str, ref: PlatformRef) -> None:
        """Remember that platform message ``platform_ref`` shows ``ref``."""
        ids = await self._session(key)
        target = await self._branch(ids.session_id, ref.branch)
        async with self.storage.unit_of_work() as uow:
            floor, page_id = await _locate(uow, target, ref.floor, ref.page)
        await self.history_service.link_message(
            ids.session_id, platform_ref, floor_id=floor.id, page_id=page_id, role=ref.role
        )

    async def resolve_message(self, key: SessionKey, platform_ref: str) -> PlatformRef | None:
        """Map a platform message back to its floor and page."""
        ids = await self._session(key)
        async with self.storage.unit_of_work() as uow:
            link = await uow.links.get(ids.session_id, platform_ref)
            if link is None:
                return None
            floor = await uow.floors.get(link.floor_id)
            branch = await uow.branches.get(link.branch_id)
            number: int | None = None
            if link.page_id is not None:
                shown = await uow.pages.get(link.page_id)
                number = shown_index(await uow.pages.of_floors([floor.id]), shown.number)
        return PlatformRef(branch=branch.name, floor=floor.seq, page=number, role=link.role)

    async def hide_message(self, key: SessionKey, platform_ref: str) -> None:
        """A platform deletion: hide the floor or page it maps to (never delete)."""
        ids = await self._session(key)
        await self.history_service.hide_message(ids.session_id, platform_ref)

    # ------------------------------------------------------------------ assets and tools

    async def import_asset(
        self, key: SessionKey, kind: AssetKind, filename: str, data: bytes
    ) -> ImportSummary:
        """Import a SillyTavern file into the session's realm and bind it to the session."""
        from engine.turns.transfer import import_asset

        ids = await self._session(key)
        return await import_asset(self, key, ids.session_id, ids.realm_id, kind, filename, data)

    async def preview(self, key: SessionKey, branch: str, text: str) -> str:
        """Evaluate macros in ``text`` (preview phase: no write persists)."""
        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        async with self.storage.unit_of_work() as uow:
            from engine.turns.context import load_assets

            session = await uow.sessions.get(ids.session_id)
            assets = await load_assets(uow, session)
        state = await self.variables_service.state(target.id)
        context = macro_context(
            assets.character,
            user_name=_console_user(key),
            local=state.local(),
            global_vars=dict(state.global_),
        )
        return evaluate(text, context, phase="preview").text

    async def dry_run(self, key: SessionKey, branch: str, text: str) -> Mapping[str, Any]:
        """Assemble the prompt for ``text`` without calling the model or persisting."""
        from engine.turns.transfer import dry_run

        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        return await dry_run(self, ids.session_id, target, text)

    async def export_chat(self, key: SessionKey, branch: str) -> bytes:
        """The branch as SillyTavern JSONL."""
        from engine.turns.transfer import export_chat

        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        return await export_chat(self, ids.session_id, target)

    async def reset(self, key: SessionKey) -> None:
        """Start the main branch over: its floors are hidden (kept) and its branch-scope
        variables deleted (the deletions are logged, so history can show them)."""
        ids = await self._session(key)
        target = await self._branch(ids.session_id, MAIN_BRANCH)
        async with self.locks.hold(ids.session_id, MAIN_BRANCH):
            async with self.storage.unit_of_work() as uow:
                for floor in await uow.floors.committed(target.id, 1, None):
                    await uow.floors.set_hidden(floor.id, True)
                names = list(await uow.variables.values("branch", target.id))
            for name in names:
                await self.variables_service.delete(target.id, "branch", name)
        self._emit("session.reset", session=key.key)

    # ------------------------------------------------------------------ LLM profiles

    async def save_profile(
        self, key: SessionKey, profile: LLMProfile, *, api_key: str | None = None
    ) -> None:
        """Store a profile in the session's realm; ``api_key`` is encrypted first (refused
        without a secret key)."""
        ids = await self._session(key)
        if api_key:
            profile = profile.with_api_key(api_key, self.cipher)
        await self._edit_profiles(ids.realm_id, lambda data: with_profile(data, profile))

    async def bind_profile(
        self, key: SessionKey, *, scope: BindingScope, slot: SlotPattern, profile_id: str
    ) -> None:
        """Bind a profile to a slot (or ``*``) of this session or of its whole realm."""
        ids = await self._session(key)
        owner = ids.session_id if scope == "session" else ids.realm_id
        binding = ProfileBinding(
            scope=scope, scope_id=str(owner), slot=slot, profile_id=profile_id
        )
        await self._edit_profiles(ids.realm_id, lambda data: with_binding(data, binding))

    async def profile_snapshot(self, key: SessionKey) -> ProfileSnapshot:
        """The profiles a turn of this session would use now."""
        ids = await self._session(key)
        async with self.storage.unit_of_work() as uow:
            session = await uow.sessions.get(ids.session_id)
            asset = await uow.assets.get(ids.realm_id, PROFILE_ASSET, PROFILE_ASSET_NAME)  # type: ignore[arg-type]
        return self._snapshot(session, asset.data if asset is not None else {})

    async def _edit_profiles(self, realm_id: int, change: Any) -> None:
        async with self.storage.unit_of_work() as uow:
            asset = await uow.assets.get(realm_id, PROFILE_ASSET, PROFILE_ASSET_NAME)  # type: ignore[arg-type]
            data = change(dict(asset.data) if asset is not None else {})
            await uow.assets.put(
                realm_id=realm_id,
                kind=PROFILE_ASSET,  # type: ignore[arg-type]
                name=PROFILE_ASSET_NAME,
                data=data,
            )


def _enabled_slots(settings: SessionSettings) -> tuple[Any, ...]:
    slots = settings.extra.get("slots")
    if isinstance(slots, list | tuple):
        return tuple(s for s in slots if s in SLOTS)
    return tuple(DEFAULT_ENABLED_SLOTS)


def _console_user(key: SessionKey) -> str:
    return "User"


async def _locate(
    uow: Any, branch: Branch, seq: int, page: int | None
) -> tuple[Floor, int | None]:
    """The floor ``seq`` the branch sees (committed, or its own open floor) and the id of
    its page number ``page``."""
    lineage = await store.lineage_of(uow, branch)
    pairs = await store.lineage_pages(uow, lineage, seq, seq)
    floor: Floor | None = pairs[0][0] if pairs else None
    if floor is None:
        latest = await uow.floors.latest(branch.id)
        if latest is not None and latest.seq == seq:
            floor = latest
    if floor is None:
        raise NotFoundError(f"branch {branch.name!r} has no floor {seq}")
    if page is None:
        return floor, None
    pages = await uow.pages.of_floors([floor.id])
    number = page_number(pages, page)
    for candidate in pages:
        if candidate.number == number:
            return floor, candidate.id
    raise NotFoundError(f"floor {seq} of branch {branch.name!r} has no page {page}")
