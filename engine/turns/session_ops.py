"""Everything but generating of :class:`~engine.turns.service.TavernService`: sessions, forks,
history, variables, platform links, imports and exports, previews, reset and LLM profiles."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from engine.errors import ConfigurationError, NotFoundError
from engine.macros import evaluate
from engine.prompt.macro_port import macro_context
from engine.timeline.values import MAIN_BRANCH, Branch, Floor
from engine.turns.api import (
    REPLY_POLICIES,
    AssetKind,
    BranchInfo,
    ImportSummary,
    PlatformRef,
    ReplyPolicy,
    ReplyView,
    Scope,
    SessionInfo,
    SessionKey,
    VariableWrite,
)
from engine.turns.base import ServiceBase, SessionIds
from engine.turns.context import PROFILE_ASSET, PROFILE_ASSET_NAME
from engine.turns.notes import AUTHOR_NOTE, check_note_setting, session_note
from engine.turns.options import (
    MAX_MEMORY_BUDGET,
    MEMORY_BUDGET,
    MEMORY_SETTING,
    memory_budget,
    memory_enabled,
    option_spec,
    tools_enabled,
)
from engine.turns.profile_store import with_binding, with_profile
from engine.turns.profiles import (
    SLOTS,
    BindingScope,
    LLMProfile,
    ProfileBinding,
    ProfileSnapshot,
    SlotPattern,
)
from engine.turns.tools import TOOLS_GLOBAL_WRITES, ToolPolicy
from engine.turns.views import page_number, shown_index, views_of
from engine.variables import store


class SessionOps(ServiceBase):
    """Sessions, branches, variables, links, assets and profiles."""

    async def open_session(self, key: SessionKey, *, character: str | None = None) -> SessionInfo:
        """Get or create the session (and its realm and main branch)."""
        # A new session starts from the service's defaults; an existing one keeps its own.
        opened = await self.timeline.open_session(
            key.platform, key.realm, key.key, settings=self.session_defaults.settings()
        )
        self._ids[key] = SessionIds(session_id=opened.session.id, realm_id=opened.realm.id)
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
        policy = _POLICIES.get(s.reply_policy or "")
        return SessionInfo(
            key=key,
            character=s.character,
            preset=s.preset,
            worldbooks=tuple(s.worldbooks),
            branches=tuple(infos),
            prompt_mode=s.prompt_mode,
            macro_mode=s.macro_mode if s.macro_mode in ("full", "off") else "read_only",  # type: ignore[arg-type]
            reply_policy=policy,
            tools=tools_enabled(s),
            memory=memory_enabled(s),
            memory_budget=memory_budget(s),
            tools_global_writes=s.extra.get(TOOLS_GLOBAL_WRITES) is True,
            closed=bool(s.extra.get("closed")),
            current_branch=str(s.extra.get("current_branch") or MAIN_BRANCH),
            author_note=session_note(s),
        )

    async def configure(self, key: SessionKey, **changes: Any) -> SessionInfo:
        """Change session settings: ``prompt_mode``, ``macro_mode``, ``character``, ``preset``,
        and extra keys such as ``slots`` (enabled instance slots), ``tools`` (policy),
        ``memory`` (on/off), ``memory_budget`` and ``author_note`` (stored form of
        :mod:`engine.turns.notes`; None clears it)."""
        check_settings(changes)
        ids = await self._session(key)
        await self._update(ids.session_id, **changes)
        return await self.session_info(key)

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

    async def link_message(self, key: SessionKey, platform_ref: str, ref: PlatformRef) -> None:
        """Remember that platform message ``platform_ref`` shows ``ref``."""
        ids = await self._session(key)
        target = await self._branch(ids.session_id, ref.branch)
        async with self.storage.unit_of_work() as uow:
            floor, page_id = await locate_floor(uow, target, ref.floor, ref.page)
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

    async def import_asset(
        self, key: SessionKey, kind: AssetKind, filename: str, data: bytes, *, bind: bool = True
    ) -> ImportSummary:
        """Import a SillyTavern file into the session's realm and (``bind``) bind it to the
        session; ``bind=False`` stores it in the realm only (a chat always gets its branch)."""
        from engine.turns.transfer import import_asset

        ids = await self._session(key)
        return await import_asset(
            self, key, ids.session_id, ids.realm_id, kind, filename, data, bind=bind
        )

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
        note = session_note(session.settings)
        context.authors_note = note.text if note is not None else ""
        return evaluate(text, context, phase="preview").text

    async def dry_run(self, key: SessionKey, branch: str, text: str) -> Mapping[str, Any]:
        """Assemble the prompt for ``text`` without calling the model or persisting."""
        from engine.turns.transfer import dry_run

        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        return await dry_run(self, ids.session_id, target, text)

    async def export_chat(
        self, key: SessionKey, branch: str, *, include_hidden: bool = False
    ) -> bytes:
        """The branch as SillyTavern JSONL (``include_hidden``: hidden floors too, marked
        ``is_system`` as SillyTavern marks hidden messages)."""
        from engine.turns.transfer import export_chat

        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        return await export_chat(self, ids.session_id, target, include_hidden=include_hidden)

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
        await self._update(ids.session_id, current_branch=MAIN_BRANCH)
        self._emit("session.reset", session=key.key)

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


def _console_user(key: SessionKey) -> str:
    return "User"


async def locate_floor(
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
        # A failed floor keeps its number and input (issue 12): its messages link to it too,
        # so a reaction on the input finds the floor to retry (issue 13).
        newest = await uow.floors.newest(branch.id)
        if newest is not None and newest.seq == seq:
            floor = newest
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


_POLICIES: Final[dict[str, ReplyPolicy]] = {p: p for p in REPLY_POLICIES}
_WORDS: Final[Mapping[str, str]] = {
    "prompt_mode": "mode",
    "macro_mode": "macros",
    "reply_policy": "policy",
}
"""Session settings that hold one word of an option of :data:`SESSION_OPTION_SPECS`."""


def check_settings(changes: Mapping[str, Any]) -> None:
    """Refuse session settings the turn workflow cannot work with."""
    for name, option in _WORDS.items():
        values = option_spec(option).values
        if name in changes and changes[name] not in values:
            raise ConfigurationError(
                f"session setting {name} must be one of {', '.join(values)}, not {changes[name]!r}"
            )
    slots = changes.get("slots")
    if slots is not None and (
        not isinstance(slots, list | tuple) or any(slot not in SLOTS for slot in slots)
    ):
        raise ConfigurationError(f"session setting slots must list some of {', '.join(SLOTS)}")
    budget = changes.get(MEMORY_BUDGET)
    if budget is not None and (
        not isinstance(budget, int)
        or isinstance(budget, bool)
        or not 0 <= budget <= MAX_MEMORY_BUDGET
    ):
        raise ConfigurationError(
            f"session setting {MEMORY_BUDGET} must be a whole number of tokens from 0 to "
            f"{MAX_MEMORY_BUDGET}, not {budget!r}"
        )
    if AUTHOR_NOTE in changes:
        check_note_setting(changes[AUTHOR_NOTE])
    for switch in (TOOLS_GLOBAL_WRITES, MEMORY_SETTING):
        allowed = changes.get(switch)
        if allowed is not None and not isinstance(allowed, bool):
            raise ConfigurationError(
                f"session setting {switch} must be true or false, not {allowed!r}"
            )
    if "tools" in changes:
        try:
            ToolPolicy.from_json(changes["tools"], default_enabled=False)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(f"session setting tools: {exc}") from exc
