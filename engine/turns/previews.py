"""Looking without playing: a macro preview of some text and a dry run of the prompt the next
message would get. Neither calls the model nor persists anything (a dry run does not even mark
memories used)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from engine.macros import Phase, evaluate
from engine.memory.scoping import viewpoint_for
from engine.ports import Clock, EventSink, RandomSource, Storage, UnitOfWork
from engine.prompt.macro_port import macro_context
from engine.prompt.regex_budget import RegexBudget
from engine.timeline.history import HistoryService
from engine.timeline.values import Branch, Floor, NewMessage
from engine.turns.api import OnText, SessionKey
from engine.turns.context import (
    HISTORY_WINDOW,
    TurnRead,
    read_turn,
    stored_inputs,
    window_pages,
)
from engine.turns.errors import NothingToDoError
from engine.turns.greeting import greeting_line
from engine.turns.memory_access import MemoryAccess
from engine.turns.notes import session_note
from engine.turns.options import MEMORY_BUDGET, TOOLS_SETTING, session_stages
from engine.turns.parsed_assets import load_assets
from engine.turns.personas import Personas
from engine.turns.profile_store import ProfileStore
from engine.turns.sessions import Sessions
from engine.turns.tool_builtins import ToolEnv
from engine.turns.tools import ToolBox, ToolPolicy
from engine.turns.turn_prompt import TurnOptions
from engine.turns.workflow import Generation, ModelFor
from engine.variables import store
from engine.variables.service import VariableService

__all__ = ["PREVIEW_USER", "Previews"]

PREVIEW_USER: Final = "User"
"""The ``{{user}}`` of a preview on a branch nobody has spoken on yet (SillyTavern's default
user name); otherwise a preview names the branch's last speaker, as its next turn would."""


class Previews:
    """Macro previews and prompt dry runs for a session's branch."""

    def __init__(
        self,
        storage: Storage,
        sessions: Sessions,
        variables: VariableService,
        memory: MemoryAccess,
        profiles: ProfileStore,
        personas: Personas,
        *,
        model_for: ModelFor,
        events: EventSink,
        clock: Clock,
        rng: RandomSource,
    ) -> None:
        self._storage = storage
        self._sessions = sessions
        self._variables = variables
        self._memory = memory
        self._profiles = profiles
        self._personas = personas
        self._model_for = model_for
        self._events = events
        self._clock = clock
        self._rng = rng

    async def preview(self, key: SessionKey, branch: str, text: str) -> str:
        """Evaluate macros in ``text`` (preview phase: no write persists)."""
        ids, target = await self._sessions.target(key, branch)
        async with self._storage.unit_of_work() as uow:
            session = await uow.sessions.get(ids.session_id)
            assets = await load_assets(uow, session)
            user_name = await _last_speaker(uow, target) or PREVIEW_USER
        state = await self._variables.state(target.id)
        context = macro_context(
            assets.character,
            user_name=user_name,
            local=state.local(),
            global_vars=dict(state.global_),
        )
        note = session_note(session.settings)
        context.authors_note = note.text if note is not None else ""
        return evaluate(text, context, phase="preview").text

    async def _next_turn(
        self, key: SessionKey, branch_name: str, text: str | None, *, user_name: str | None = None
    ) -> _NextTurn:
        """Read the turn the branch's next message would get (``text``: that message, None
        for a turn with no new input; ``user_name`` None: the branch's last speaker); nothing
        is stored or marked used."""
        ids, branch = await self._sessions.target(key, branch_name)
        async with self._storage.unit_of_work() as uow:
            session = await uow.sessions.get(ids.session_id)
            assets = await load_assets(uow, session)
        # The message as a turn stores it (the user-input regex scripts of the store channel
        # run on it), with no unit of work open and on the budget the assembly then shares,
        # as in a turn: the dry run shows the prompt the turn would send.
        regex_budget = RegexBudget()
        extra: str | None = None
        if text is not None:
            stored = await stored_inputs(
                [NewMessage(role="user", raw=text)], assets.scripts, regex_budget
            )
            extra = stored[0].raw
        async with self._storage.unit_of_work() as uow:
            lineage = await store.lineage_of(uow, branch)
            # The next floor's number: after failed floors too, whose inputs stay in the chat.
            head = await store.next_seq(uow, lineage) - 1
            probe = Floor(
                id=-1,
                branch_id=branch.id,
                seq=head + 1,
                state="draft",
                active_page=None,
                hidden=False,
                error=None,
                created_at=session.created_at,
                updated_at=session.created_at,
            )
            read = await read_turn(
                uow,
                session=session,
                floor=probe,
                mode="dry_run",
                user_name=user_name,
                extra_input=extra,
                assets=assets,
            )
        opening = greeting_line(read.assets.card) if head == 0 else None
        if opening is not None:
            # A branch with no floor is a new chat: SillyTavern's opens with the card's
            # greeting, so its first prompt has it (once a greeting is stored as floor 1,
            # the branch has a floor and the history holds it instead).
            read = replace(
                read, history=(opening, *read.history), total_messages=read.total_messages + 1
            )
        return _NextTurn(branch=branch, read=read, head=head, regex_budget=regex_budget)

    async def dry_run(self, key: SessionKey, branch_name: str, text: str) -> Mapping[str, Any]:
        """Assemble the prompt ``text`` would get as the branch's next message."""
        if not text:
            await self._sessions.target(key, branch_name)  # an unknown branch says so first
            raise NothingToDoError("a dry run needs the text of a message")
        turn = await self._next_turn(key, branch_name, text)
        settings = turn.read.session.settings
        tools = ToolBox(
            ToolPolicy.from_json(settings.extra.get(TOOLS_SETTING), default_enabled=False),
            ToolEnv(
                state=turn.read.state, staged=[], card={}, clock=self._clock, random=self._rng
            ),
        )
        generation = await self._generation(
            turn, mode="respond", phase="dry_run", tools=tools, on_text=None
        )
        return await _assembled(generation, tools)

    async def dry_run_floor(
        self, key: SessionKey, branch_name: str, floor_no: int
    ) -> Mapping[str, Any]:
        """Assemble again the prompt of floor ``floor_no`` as seen from the branch: its own
        input, the history before it and the variables it was written on, as a regenerate of
        that floor reads them (the inspector's view of a past floor). Nothing is stored and no
        model is called; assets and memory are read as they are now."""
        ids, branch = await self._sessions.target(key, branch_name)
        floor = (await HistoryService(self._storage).floor_view(branch.id, floor_no)).floor
        async with self._storage.unit_of_work() as uow:
            session = await uow.sessions.get(ids.session_id)
            read = await read_turn(uow, session=session, floor=floor, mode="regenerate")
            own = next(b for b in read.branches if b.id == floor.branch_id)
        turn = _NextTurn(branch=own, read=read, head=floor.seq - 1, regex_budget=RegexBudget())
        settings = read.session.settings
        tools = ToolBox(
            ToolPolicy.from_json(settings.extra.get(TOOLS_SETTING), default_enabled=False),
            ToolEnv(state=read.state, staged=[], card={}, clock=self._clock, random=self._rng),
        )
        generation = await self._generation(
            turn, mode="regenerate", phase="dry_run", tools=tools, on_text=None
        )
        return await _assembled(generation, tools)

    async def impersonate(
        self,
        key: SessionKey,
        branch_name: str,
        *,
        user_name: str | None = None,
        on_text: OnText | None = None,
    ) -> str:
        """The model writes the user's next message (SillyTavern's impersonate generation:
        the preset's impersonation prompt last, no tools), streamed to ``on_text``; a draft,
        so nothing is stored and its macro writes are previews only."""
        await self._sessions.refuse_closed(key)
        turn = await self._next_turn(key, branch_name, None, user_name=user_name)
        tools = ToolBox(
            ToolPolicy(enabled=False),
            ToolEnv(
                state=turn.read.state, staged=[], card={}, clock=self._clock, random=self._rng
            ),
        )
        generation = await self._generation(
            turn, mode="impersonate", phase="preview", tools=tools, on_text=on_text
        )
        return await generation.draft()

    async def _generation(
        self,
        turn: _NextTurn,
        *,
        mode: str,
        phase: Phase,
        tools: ToolBox,
        on_text: OnText | None,
    ) -> Generation:
        """A generation of the branch's next turn with the memory block that turn would get
        (found without marking anything used)."""
        read, branch, head = turn.read, turn.branch, turn.head
        session = read.session
        settings = session.settings
        memory_items: tuple[Any, ...] = ()
        if self._memory.service is not None and "memory_retrieval" in session_stages(settings):
            view = viewpoint_for(session, branch, read.branches, head + 1)
            memory_items = await self._memory.retrieve(
                view, read, settings.extra.get(MEMORY_BUDGET), mark_used=False
            )
        return Generation(
            read,
            TurnOptions(
                mode=mode,
                prompt_mode=settings.prompt_mode,
                macro_mode=settings.macro_mode,
                stages=("narrator",),
                snapshot=self._profiles.snapshot(session, read.assets.profiles),
                phase=phase,
                memory=memory_items,
                persona=read.persona,
            ),
            model_for=self._model_for,
            tools=tools,
            events=self._events,
            on_text=on_text,
            where={"branch": branch.name, "floor": head + 1, mode: True},
            regex_budget=turn.regex_budget,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class _NextTurn:
    """What the branch's next turn would read (see :meth:`Previews._next_turn`)."""

    branch: Branch
    read: TurnRead
    head: int
    regex_budget: RegexBudget


async def _assembled(generation: Generation, tools: ToolBox) -> dict[str, Any]:
    """The dry-run object of ``generation``'s prompt (``tavernbot prompt dry-run``'s keys)."""
    result, macros = await generation.assemble_only()
    return {
        "mode": result.ir.mode,
        "messages": [m.to_json() for m in result.ir.messages],
        "world_info": [e.to_json() for e in result.world_info.activated],
        "macro": {
            "phase": macros.phase,
            "warnings": [w.to_json() for w in macros.warnings],
            "mutations": [m.to_json() for m in macros.mutations],
        },
        "budget": result.ir.budget.to_json(),
        "warnings": list(result.ir.warnings),
        # The tools the model request would carry (none unless the session's tools are on).
        "tools": [spec.name for spec in tools.specs("narrator")],
    }


async def _last_speaker(uow: UnitOfWork, branch: Branch) -> str | None:
    """The name of the last user who spoke on the branch (within the history window), as
    stored (their persona name when they had one), or None."""
    lineage = await store.lineage_of(uow, branch)
    last = await store.last_seen(uow, lineage)
    if last < 1:
        return None
    pairs = await window_pages(uow, lineage, max(1, last - HISTORY_WINDOW + 1), last)
    messages = await uow.messages.window([p.floor_id for p in pairs])
    spoken = [m.speaker_name for m in messages if m.role == "user" and m.speaker_name]
    return spoken[-1] if spoken else None
