"""An in-memory :class:`engine.turns.api.RoleplayService` for front-end tests.

It keeps sessions, branches, floors, pages and variables in dictionaries and answers with a
deterministic reply (``"<character>: I hear you, <speaker>. You said: <text>"``, streamed in a few
chunks), so Discord, Telegram and console tests can check what a front end does with the service
without a database or a model. Tests may set ``reply_for`` to script replies, ``fail_next`` to
make the next generation fail, and read ``calls`` to see what the front end asked for.

The front-end operations (personas, memory, asset binding, current branch, options, the
Author's Note, closing, floor speakers) behave as the engine's do; tests put memories in with
:meth:`remember`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.errors import (
    ConfigurationError,
    GenerationError,
    InvalidTransitionError,
    LimitExceededError,
    NotFoundError,
)
from engine.formats.png import is_png
from engine.group.settings import group_of
from engine.timeline.history import MAX_HISTORY
from engine.turns.api import (
    MAIN_BRANCH,
    MEMORY_LIST_LIMIT,
    AssetKind,
    BranchInfo,
    ImportSummary,
    MemoryView,
    OnReply,
    OnSpeaker,
    OnText,
    PlatformRef,
    ReplyView,
    Scope,
    SessionInfo,
    SessionKey,
    Speaker,
    UserLine,
    VariableWrite,
)
from engine.turns.options import (
    SessionDefaults,
    memory_budget,
    memory_enabled,
    tools_enabled,
)
from tests.fakes.roleplay_edits import FakeTurnEdits
from tests.fakes.roleplay_group import FakeGroupCalls
from tests.fakes.roleplay_settings import FakeSessionSettings
from tests.fakes.roleplay_state import FakeBranch, FakeFloor, FakeSession

CHUNKS = 3


class FakeRoleplayService(FakeTurnEdits, FakeGroupCalls, FakeSessionSettings):
    """Dictionary-backed stand-in for the engine service (see the module docstring)."""

    def __init__(
        self,
        *,
        default_character: str = "Seraphina",
        session_defaults: SessionDefaults | None = None,
    ) -> None:
        self.default_character = default_character
        self.session_defaults = session_defaults or SessionDefaults()
        """What every new session starts with, as the engine's ``session_defaults``."""
        self.sessions: dict[SessionKey, FakeSession] = {}
        self.realm_globals: dict[str, dict[str, Any]] = {}
        self.assets: dict[tuple[str, str, str], bytes] = {}
        self.calls: list[tuple[str, Any]] = []
        self.reply_for: Callable[[str, Sequence[UserLine], int], str] | None = None
        self.fail_next = False
        self.personas: dict[tuple[str, str], tuple[str, str]] = {}
        self.memory: dict[str, tuple[str, MemoryView]] = {}
        """Memory id -> (realm, memory); put memories in with :meth:`remember`."""

    # ------------------------------------------------------------------ helpers
    def _session(self, key: SessionKey) -> FakeSession:
        try:
            return self.sessions[key]
        except KeyError:
            raise NotFoundError(f"no session {key.platform}:{key.realm}:{key.key}") from None

    def _branch(self, key: SessionKey, branch: str) -> FakeBranch:
        session = self._session(key)
        try:
            return session.branches[branch]
        except KeyError:
            raise NotFoundError(f"no branch {branch!r} in session {key.key}") from None

    def _lineage(self, session: FakeSession, branch: FakeBranch) -> list[FakeFloor]:
        if branch.parent is None:
            return list(branch.floors)
        parent = session.branches[branch.parent]
        return self._lineage(session, parent)[: branch.fork_floor or 0] + branch.floors

    def _view(self, session: FakeSession, branch: FakeBranch, at: int | None = None) -> ReplyView:
        floors = self._lineage(session, branch)
        if not floors:
            raise NotFoundError(f"branch {branch.name!r} has no reply yet")
        number = len(floors) if at is None else at
        floor = floors[number - 1]
        return ReplyView(
            session=session.key,
            branch=branch.name,
            floor=number,
            page=floor.active + 1,
            pages=len(floor.pages),
            text=floor.pages[floor.active],
            character=session.character or self.default_character,
        )

    async def _generate(
        self, session: FakeSession, lines: Sequence[UserLine], page: int, on_text: OnText | None
    ) -> str:
        if self.fail_next:
            self.fail_next = False
            raise GenerationError("the model failed (scripted)")
        character = session.character or self.default_character
        if self.reply_for is not None:
            text = self.reply_for(character, lines, page)
        else:
            said = " / ".join(f"{line.speaker.name}: {line.text}" for line in lines)
            text = f"{character}: I hear you. You said: {said}"
            if page > 1:
                text += f" (take {page})"
        if on_text is not None:
            step = max(1, len(text) // CHUNKS)
            for end in range(step, len(text) + step, step):
                await on_text(text[: min(end, len(text))])
        return text

    def _effective(self, session: FakeSession, branch: FakeBranch) -> dict[str, Any]:
        merged = dict(self.realm_globals.get(session.key.realm, {}))
        merged.update(session.chat_vars)
        for floor in self._lineage(session, branch):
            merged.update(floor.page_vars[floor.active])
        merged.update(branch.vars)
        return merged

    # ------------------------------------------------------------------ RoleplayService
    async def open_session(self, key: SessionKey, *, character: str | None = None) -> SessionInfo:
        self.calls.append(("open_session", key))
        session = self.sessions.get(key)
        if session is None:
            session = FakeSession(
                key=key, character=character, settings=self.session_defaults.settings()
            )
            session.branches[MAIN_BRANCH] = FakeBranch(MAIN_BRANCH, None, None)
            self.sessions[key] = session
        elif character is not None:
            session.character = character
        session.closed = False
        return await self.session_info(key)

    async def session_info(self, key: SessionKey) -> SessionInfo:
        session = self._session(key)
        s = session.settings
        group = group_of(s.extra)
        return SessionInfo(
            key=key,
            character=session.character,
            preset=session.preset,
            worldbooks=tuple(session.worldbooks),
            prompt_mode=s.prompt_mode,
            macro_mode=s.macro_mode,  # type: ignore[arg-type]
            reply_policy=s.reply_policy,  # type: ignore[arg-type]
            tools=tools_enabled(s),
            memory=memory_enabled(s),
            memory_budget=memory_budget(s),
            tools_global_writes=s.extra.get("tools_global_writes") is True,
            closed=session.closed,
            current_branch=session.current_branch,
            author_note=session.note,
            members=group.members if group is not None else (),
            muted=group.muted if group is not None else (),
            strategy=group.strategy if group is not None else None,
            group_mode=group.mode if group is not None else None,
            branches=tuple(
                BranchInfo(
                    name=b.name,
                    parent=b.parent,
                    fork_floor=b.fork_floor,
                    floors=len(self._lineage(session, b)),
                )
                for b in session.branches.values()
            ),
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
        self.calls.append(("respond", (key, branch, tuple(lines))))
        if called:  # the fake plays no group: it only records who was called
            self.calls.append(("called", (key, branch, tuple(called))))
        session = self._session(key)
        self._refuse_closed(session)
        lines = [self._as_persona(key, line) for line in lines]
        target = self._branch(key, branch)
        if on_speaker is not None:
            await on_speaker(session.character or self.default_character)
        text = await self._generate(session, lines, 1, on_text)
        target.floors.append(FakeFloor(lines=list(lines), pages=[text], page_vars=[{}]))
        view = self._view(session, target)
        if on_reply is not None:
            await on_reply(view)
        return view

    async def regenerate(
        self,
        key: SessionKey,
        branch: str,
        *,
        floor: int | None = None,
        on_text: OnText | None = None,
    ) -> ReplyView:
        # ``floor`` (an earlier reply) is recorded only when given, so older checks hold.
        self.calls.append(("regenerate", (key, branch) if floor is None else (key, branch, floor)))
        session = self._session(key)
        self._refuse_closed(session)
        target = self._branch(key, branch)
        floors = self._lineage(session, target)
        if not floors:
            raise InvalidTransitionError("nothing to regenerate yet")
        chosen = self._earlier(floors, floor)
        text = await self._generate(session, chosen.lines, len(chosen.pages) + 1, on_text)
        chosen.pages.append(text)
        chosen.page_vars.append({})
        chosen.active = len(chosen.pages) - 1
        return self._view(session, target, floor)

    @staticmethod
    def _earlier(floors: list[FakeFloor], floor: int | None) -> FakeFloor:
        """Floor ``floor`` (None: the latest), as the engine allows it: the latest, or an
        earlier one that only replies without input (a group turn's) follow."""
        if floor is None or floor == len(floors):
            return floors[-1]
        if not 1 <= floor < len(floors) or any(f.lines for f in floors[floor:]):
            raise InvalidTransitionError(f"floor {floor} is not its branch's latest floor")
        return floors[floor - 1]

    async def swipe(
        self, key: SessionKey, branch: str, step: int, *, floor: int | None = None
    ) -> ReplyView:
        self.calls.append(
            ("swipe", (key, branch, step) if floor is None else (key, branch, step, floor))
        )
        session = self._session(key)
        target = self._branch(key, branch)
        floors = self._lineage(session, target)
        if not floors:
            raise InvalidTransitionError("nothing to swipe yet")
        chosen = self._earlier(floors, floor)
        chosen.active = max(0, min(len(chosen.pages) - 1, chosen.active + step))
        return self._view(session, target, floor)

    async def fork(
        self, key: SessionKey, branch: str, *, after_floor: int | None, name: str
    ) -> BranchInfo:
        self.calls.append(("fork", (key, branch, after_floor, name)))
        session = self._session(key)
        source = self._branch(key, branch)
        floors = len(self._lineage(session, source))
        at = floors if after_floor is None else after_floor
        if not 0 <= at <= floors:
            raise NotFoundError(f"branch {branch!r} has no floor {at}")
        if name in session.branches:
            return await self._info(session, session.branches[name])
        # Forks of forks are flattened onto the source lineage, which is all tests need.
        created = FakeBranch(name, branch, at)
        session.branches[name] = created
        return await self._info(session, created)

    async def _info(self, session: FakeSession, branch: FakeBranch) -> BranchInfo:
        return BranchInfo(
            name=branch.name,
            parent=branch.parent,
            fork_floor=branch.fork_floor,
            floors=len(self._lineage(session, branch)),
        )

    async def history(
        self, key: SessionKey, branch: str, *, limit: int = 50, include_hidden: bool = False
    ) -> list[ReplyView]:
        """As the engine's: the newest ``limit`` floors, of which the hidden ones are left out
        (so fewer may come back; floor numbers keep counting them). A floor whose active
        page is hidden stays, with no text and no character; hidden pages still count."""
        if not 1 <= limit <= MAX_HISTORY:
            raise LimitExceededError(
                f"history limit {limit} is outside 1..{MAX_HISTORY}",
                limit="MAX_HISTORY",
                value=MAX_HISTORY,
            )
        session = self._session(key)
        target = self._branch(key, branch)
        floors = list(enumerate(self._lineage(session, target), start=1))[-limit:]
        views = []
        for number, floor in floors:
            if floor.hidden and not include_hidden:
                continue
            shown = floor.active not in floor.hidden_pages
            views.append(
                ReplyView(
                    session=key,
                    branch=branch,
                    floor=number,
                    page=floor.active + 1,
                    pages=len(floor.pages),
                    text=floor.pages[floor.active] if shown else "",
                    character=(session.character or self.default_character) if shown else "",
                    inputs=tuple((line.speaker.name, line.text) for line in floor.lines),
                    hidden=floor.hidden,
                )
            )
        return views

    async def variables(
        self, key: SessionKey, branch: str, scope: Scope | None = None
    ) -> dict[str, Any]:
        session = self._session(key)
        target = self._branch(key, branch)
        if scope is None:
            return self._effective(session, target)
        if scope == "global":
            return dict(self.realm_globals.get(key.realm, {}))
        if scope == "chat":
            return dict(session.chat_vars)
        if scope == "branch":
            return dict(target.vars)
        floors = self._lineage(session, target)
        return dict(floors[-1].page_vars[floors[-1].active]) if floors else {}

    def _scope_store(self, key: SessionKey, branch: str, scope: Scope) -> dict[str, Any]:
        session = self._session(key)
        target = self._branch(key, branch)
        if scope == "global":
            return self.realm_globals.setdefault(key.realm, {})
        if scope == "chat":
            return session.chat_vars
        if scope == "branch":
            return target.vars
        floors = self._lineage(session, target)
        if not floors:
            raise InvalidTransitionError(f"no floor yet to hold a {scope} variable")
        return floors[-1].page_vars[floors[-1].active]

    async def set_variable(
        self, key: SessionKey, branch: str, name: str, value: Any, scope: Scope = "chat"
    ) -> None:
        self.calls.append(("set_variable", (key, branch, name, value, scope)))
        self._scope_store(key, branch, scope)[name] = value

    async def delete_variable(
        self, key: SessionKey, branch: str, name: str, scope: Scope = "chat"
    ) -> None:
        self.calls.append(("delete_variable", (key, branch, name, scope)))
        store = self._scope_store(key, branch, scope)
        if name not in store:
            raise NotFoundError(f"no {scope} variable {name!r}")
        del store[name]

    async def variable_history(
        self, key: SessionKey, branch: str, name: str
    ) -> list[VariableWrite]:
        value = (await self.variables(key, branch)).get(name)
        if value is None:
            return []
        return [VariableWrite(scope="chat", value=value, floor=None, page=None)]

    async def link_message(self, key: SessionKey, platform_ref: str, ref: PlatformRef) -> None:
        self._session(key).links[platform_ref] = ref

    async def resolve_message(self, key: SessionKey, platform_ref: str) -> PlatformRef | None:
        return self._session(key).links.get(platform_ref)

    async def hide_message(self, key: SessionKey, platform_ref: str) -> None:
        self.calls.append(("hide_message", (key, platform_ref)))
        ref = await self.resolve_message(key, platform_ref)
        if ref is None:
            return
        session = self._session(key)
        floors = self._lineage(session, session.branches[ref.branch])
        if not 0 < ref.floor <= len(floors):
            return
        floor = floors[ref.floor - 1]
        # As the engine: a message showing a page hides that page, an input hides its floor.
        if ref.page is not None:
            floor.hidden_pages.add(ref.page - 1)
        else:
            floor.hidden = True

    async def import_asset(
        self, key: SessionKey, kind: AssetKind, filename: str, data: bytes, *, bind: bool = True
    ) -> ImportSummary:
        self.calls.append(("import_asset", (key, kind, filename)))
        try:
            parsed = json.loads(data)
        except ValueError as exc:
            from engine.errors import FormatError

            raise FormatError("not valid JSON", source=filename) from exc
        name = str(parsed.get("name") or filename) if isinstance(parsed, Mapping) else filename
        self.assets[(key.realm, kind, name)] = data
        if bind and kind == "card":
            await self.open_session(key, character=name)
        elif bind and kind != "chat" and key in self.sessions:
            await self._bind(key, kind, name)
        return ImportSummary(kind=kind, name=name, details={"bytes": len(data)})

    async def preview(self, key: SessionKey, branch: str, text: str) -> str:
        return text.replace("{{char}}", self._session(key).character or self.default_character)

    async def dry_run(self, key: SessionKey, branch: str, text: str) -> Mapping[str, Any]:
        return {"messages": [{"role": "user", "content": text, "sources": []}]}

    async def export_chat(
        self, key: SessionKey, branch: str, *, include_hidden: bool = False
    ) -> bytes:
        """The replies, one JSON line each; hidden floors (or a hidden active page) only with
        ``include_hidden``, then marked ``is_system`` as SillyTavern marks hidden messages."""
        self.calls.append(("export_chat", (key, branch, include_hidden)))
        session = self._session(key)
        character = session.character or self.default_character
        rows = [
            {
                "name": character,
                "is_user": False,
                "is_system": hidden,
                "mes": floor.pages[floor.active],
            }
            for floor in self._lineage(session, self._branch(key, branch))
            for hidden in [floor.hidden or floor.active in floor.hidden_pages]
            if floor.pages and (include_hidden or not hidden)
        ]
        return "\n".join(json.dumps(row) for row in rows).encode()

    async def reset(self, key: SessionKey) -> None:
        self.calls.append(("reset", key))
        session = self._session(key)
        session.branches = {MAIN_BRANCH: FakeBranch(MAIN_BRANCH, None, None)}
        session.current_branch = MAIN_BRANCH

    # ------------------------------------------------------------------ front-end operations
    def _refuse_closed(self, session: FakeSession) -> None:
        if session.closed:
            raise InvalidTransitionError(f"session {session.key.key} is closed")

    def _as_persona(self, key: SessionKey, line: UserLine) -> UserLine:
        persona = self.personas.get((key.realm, line.speaker.id))
        if persona is None:
            return line
        speaker = Speaker(id=line.speaker.id, name=persona[0])
        return UserLine(speaker=speaker, text=line.text, ref=line.ref)

    def _check_kind(self, kind: str) -> None:
        if kind not in ("card", "preset", "worldbook", "regex"):
            raise ConfigurationError(f"{kind!r} is not a realm asset")

    async def _bind(self, key: SessionKey, kind: AssetKind, name: str) -> SessionInfo:
        self._check_kind(kind)
        if (key.realm, kind, name) not in self.assets:
            raise NotFoundError(f"realm {key.realm} has no {kind} named {name!r}")
        session = self._session(key)
        if kind == "card":
            session.character = name
        elif kind == "preset":
            session.preset = name
        else:
            names = session.worldbooks if kind == "worldbook" else session.regex_sets
            if name not in names:
                names.append(name)
        return await self.session_info(key)

    def remember(self, realm: str, memory: MemoryView) -> None:
        """Put a memory into ``realm`` (what the memory agent would have written)."""
        self.memory[memory.id] = (realm, memory)

    async def greet(
        self, key: SessionKey, branch: str = MAIN_BRANCH, *, user_name: str = "User"
    ) -> ReplyView | None:
        self.calls.append(("greet", (key, branch, user_name)))
        target = self._branch(key, branch)
        session = self._session(key)
        if self._lineage(session, target):
            return None
        character = session.character or self.default_character
        target.floors.append(
            FakeFloor(lines=[], pages=[f"{character} greets {user_name}."], page_vars=[{}])
        )
        return self._view(session, target)

    async def memories(
        self,
        key: SessionKey,
        branch: str,
        *,
        query: str | None = None,
        limit: int = MEMORY_LIST_LIMIT,
    ) -> list[MemoryView]:
        self._branch(key, branch)
        found = [m for realm, m in self.memory.values() if realm == key.realm]
        if query:
            found = [m for m in found if query.lower() in m.text.lower()]
        return found[: max(0, limit)]

    async def forget_memory(self, key: SessionKey, memory_id: str) -> None:
        self.calls.append(("forget_memory", (key, memory_id)))
        entry = self.memory.get(memory_id)
        if entry is None or entry[0] != key.realm:
            raise NotFoundError(f"no memory {memory_id!r} in session {key.key}")
        del self.memory[memory_id]

    async def list_assets(self, key: SessionKey, kind: AssetKind) -> list[str]:
        self._check_kind(kind)
        return sorted(n for realm, k, n in self.assets if realm == key.realm and k == kind)

    async def bind_asset(self, key: SessionKey, kind: AssetKind, name: str) -> SessionInfo:
        self.calls.append(("bind_asset", (key, kind, name)))
        return await self._bind(key, kind, name)

    async def unbind_asset(self, key: SessionKey, kind: AssetKind, name: str) -> SessionInfo:
        self.calls.append(("unbind_asset", (key, kind, name)))
        self._check_kind(kind)
        session = self._session(key)
        if kind == "card" and session.character == name:
            session.character = None
        elif kind == "preset" and session.preset == name:
            session.preset = None
        elif kind in ("worldbook", "regex"):
            names = session.worldbooks if kind == "worldbook" else session.regex_sets
            if name not in names:
                raise NotFoundError(f"session {key.key} does not use the {kind} {name!r}")
            names.remove(name)
        else:
            raise NotFoundError(f"session {key.key} does not use the {kind} {name!r}")
        return await self.session_info(key)

    async def character_picture(self, key: SessionKey, name: str) -> bytes | None:
        """The fake keeps card files whole: a card stored as a PNG image is its own picture
        (a test may put one in :attr:`assets`); a JSON card has none."""
        data = self.assets.get((key.realm, "card", name))
        return data if data is not None and is_png(data) else None

    async def current_branch(self, key: SessionKey) -> str:
        return self._session(key).current_branch

    async def set_current_branch(self, key: SessionKey, branch: str) -> None:
        self.calls.append(("set_current_branch", (key, branch)))
        self._branch(key, branch)
        self._session(key).current_branch = branch

    async def close_session(self, key: SessionKey) -> None:
        self.calls.append(("close_session", key))
        self._session(key).closed = True

    async def floor_speakers(self, key: SessionKey, branch: str, floor: int) -> list[Speaker]:
        session = self._session(key)
        floors = self._lineage(session, self._branch(key, branch))
        if not 0 < floor <= len(floors):
            raise NotFoundError(f"branch {branch!r} has no floor {floor}")
        speakers: dict[str, Speaker] = {}
        for line in floors[floor - 1].lines:
            speakers.setdefault(line.speaker.id, line.speaker)
        return list(speakers.values())


FullFakeRoleplayService = FakeRoleplayService
"""The same fake under its former name (it used to be the subclass with the front-end calls)."""
