"""What the platform front ends ask of :class:`~engine.turns.service.TavernService` beyond turns:
personas, long-term memory, realm assets, the current branch, session options and the
Author's Note, closing a session, and who spoke on a floor.

Where things are kept (no new tables):

- A persona is a realm asset of the internal kind ``persona``, named by the platform user id,
  holding ``{"name", "description"}``: every session of the realm sees it, no other realm does.
- The current branch, the closed flag, the reply policy, the Author's Note and whether the
  model's tools may write global variables are keys of the session's settings JSON
  (``current_branch``, ``closed``, ``reply_policy``, ``author_note``, ``tools_global_writes``);
  so are the options of :mod:`engine.turns.options` (``tools``, ``memory``, ``memory_budget``).

Personas and the closed flag are cached per process (read once, updated by the calls here),
so a turn costs no extra round trip; another process changing them is seen after a restart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from engine.errors import ConfigurationError, InvalidTransitionError, NotFoundError
from engine.memory.lineage import visible_records
from engine.memory.ports import MemoryQuery
from engine.memory.records import MemoryRecord
from engine.memory.scoping import viewpoint_for
from engine.memory.service import MemoryService
from engine.prompt.inputs import AuthorNote
from engine.timeline.values import AssetKind as RealmAssetKind
from engine.timeline.values import Session
from engine.turns.api import (
    MEMORY_LIST_LIMIT,
    AssetKind,
    MemoryKindName,
    MemoryView,
    Scope,
    SessionInfo,
    SessionKey,
    Speaker,
    UserLine,
)
from engine.turns.base import SessionIds
from engine.turns.notes import AUTHOR_NOTE, note_to_json, session_note
from engine.turns.options import SESSION_OPTION_SPECS, OptionSpec, option_changes
from engine.turns.session_ops import SessionOps, locate_floor
from engine.turns.tools import TOOLS_GLOBAL_WRITES
from engine.variables import store

PERSONA_ASSET: Final = "persona"
"""Internal asset kind of personas (one asset per platform user id in a realm)."""
MAX_PERSONA_NAME: Final = 64
"""A persona name longer than this is refused (it is the ``{{user}}`` of every line)."""
MAX_PERSONA_DESCRIPTION: Final = 2_000
"""A persona description longer than this is refused."""
MAX_MEMORY_LIST: Final = 100
"""``memories`` returns at most this many records, whatever limit is asked for."""
CLOSED_SETTING: Final = "closed"
CURRENT_BRANCH_SETTING: Final = "current_branch"

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


class SessionClosedError(InvalidTransitionError):
    """A turn was asked of a session closed with ``close_session`` (``/tavern stop``)."""


class FrontEndOps(SessionOps):
    """Personas, memory, assets, current branch, options, closing, floor speakers."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._personas: dict[int, dict[str, tuple[str, str]]] = {}
        self._closed: dict[int, bool] = {}

    # ----------------------------------------------------------------- personas
    async def set_persona(
        self, key: SessionKey, user_id: str, name: str, description: str = ""
    ) -> None:
        """Set the persona ``user_id`` plays in the realm of ``key``: ``name`` becomes their
        ``{{user}}`` on the floors they write. Empty or over-long values are refused."""
        name, description = name.strip(), description.strip()
        if not user_id.strip():
            raise ConfigurationError("a persona needs the platform user id it belongs to")
        if not name:
            raise ConfigurationError("a persona needs a name")
        if len(name) > MAX_PERSONA_NAME:
            raise ConfigurationError(
                f"persona name is {len(name)} characters long; MAX_PERSONA_NAME={MAX_PERSONA_NAME}"
            )
        if len(description) > MAX_PERSONA_DESCRIPTION:
            raise ConfigurationError(
                f"persona description is {len(description)} characters long; "
                f"MAX_PERSONA_DESCRIPTION={MAX_PERSONA_DESCRIPTION}"
            )
        ids = await self._session(key)
        data = {"name": name, "description": description}
        await self.assets.put(ids.realm_id, PERSONA_ASSET, user_id, data)
        (await self._realm_personas(ids.realm_id))[user_id] = (name, description)
        self._emit("persona.set", realm=key.realm, user=user_id)

    async def persona(self, key: SessionKey, user_id: str) -> tuple[str, str] | None:
        """``(name, description)`` of ``user_id`` in the realm of ``key``, or None."""
        ids = await self._session(key)
        return (await self._realm_personas(ids.realm_id)).get(user_id)

    async def clear_persona(self, key: SessionKey, user_id: str) -> None:
        """Drop ``user_id``'s persona in the realm of ``key``; NotFoundError when none."""
        ids = await self._session(key)
        if not await self.assets.delete(ids.realm_id, PERSONA_ASSET, user_id):
            raise NotFoundError(f"user {user_id} has no persona in realm {key.realm}")
        (await self._realm_personas(ids.realm_id)).pop(user_id, None)

    async def _realm_personas(self, realm_id: int) -> dict[str, tuple[str, str]]:
        found = self._personas.get(realm_id)
        if found is None:
            found = {
                a.name: (str(a.data.get("name", a.name)), str(a.data.get("description", "")))
                for a in await self.assets.list(realm_id, PERSONA_ASSET)
            }
            self._personas[realm_id] = found
        return found

    async def _persona_description(self, realm_id: int, user_id: str | None) -> str:
        """The description of the persona of platform user ``user_id`` in the realm. Only the
        id counts: a display name is anyone's to take, so another player named like a persona
        never gets its description."""
        if user_id is None:
            return ""
        found = (await self._realm_personas(realm_id)).get(user_id)
        return found[1] if found is not None else ""

    async def _as_personas(self, ids: SessionIds, lines: Sequence[UserLine]) -> list[UserLine]:
        """The lines with each speaker named by their persona, where they have one."""
        personas = await self._realm_personas(ids.realm_id)
        out: list[UserLine] = []
        for line in lines:
            persona = personas.get(line.speaker.id)
            if persona is not None and persona[0] != line.speaker.name:
                speaker = Speaker(id=line.speaker.id, name=persona[0])
                line = UserLine(speaker=speaker, text=line.text, ref=line.ref)
            out.append(line)
        return out

    # ----------------------------------------------------------------- closing
    async def open_session(self, key: SessionKey, *, character: str | None = None) -> SessionInfo:
        """Get or create the session; a closed session is reopened."""
        info = await super().open_session(key, character=character)
        if info.closed:
            ids = await self._session(key)
            await self._update(ids.session_id, **{CLOSED_SETTING: False})
            self._closed[ids.session_id] = False
            self._emit("session.reopened", session=key.key)
            return await self.session_info(key)
        return info

    async def close_session(self, key: SessionKey) -> None:
        """Close the session (``/tavern stop``): everything is kept, turns are refused with
        :class:`SessionClosedError` until ``open_session`` reopens it."""
        ids = await self._session(key)
        await self._update(ids.session_id, **{CLOSED_SETTING: True})
        self._closed[ids.session_id] = True
        self._emit("session.closed", session=key.key)

    async def _refuse_closed(self, key: SessionKey, ids: SessionIds) -> None:
        closed = self._closed.get(ids.session_id)
        if closed is None:
            session = await self._settings(ids.session_id)
            closed = self._closed[ids.session_id] = bool(session.settings.extra.get("closed"))
        if closed:
            raise SessionClosedError(
                f"session {key.platform}:{key.key} is closed; start it again to play"
            )

    # ----------------------------------------------------------------- options
    async def set_session_option(self, key: SessionKey, name: str, value: str) -> SessionInfo:
        """Set one option of :data:`~engine.turns.options.SESSION_OPTION_SPECS` (``mode``,
        ``tools``, ``memory``, ``budget``, ``macros``, ``policy``, ``global_writes``, or a
        setting's long name); ConfigurationError, one line, for an unknown option or value."""
        ids = await self._session(key)
        settings = (await self._settings(ids.session_id)).settings
        changes = option_changes(settings, name, value)
        info = await self.configure(key, **changes)
        self._emit("session.option", session=key.key, option=name, value=str(value))
        return info

    def session_option_specs(self) -> tuple[OptionSpec, ...]:
        """Every option ``set_session_option`` takes, with its values and help."""
        return SESSION_OPTION_SPECS

    async def author_note(self, key: SessionKey) -> AuthorNote | None:
        """The session's Author's Note, or None when it has none."""
        ids = await self._session(key)
        return session_note((await self._settings(ids.session_id)).settings)

    async def set_author_note(self, key: SessionKey, note: AuthorNote | None) -> SessionInfo:
        """Set the session's Author's Note (None clears it); ConfigurationError naming the
        field and its allowed range when a value is out of range (nothing is stored then)."""
        stored = note_to_json(note) if note is not None else None
        info = await self.configure(key, **{AUTHOR_NOTE: stored})
        self._emit("session.author_note", session=key.key, cleared=note is None)
        return info

    async def tools_global_writes(self, key: SessionKey) -> bool:
        """Whether the model's tools may write the realm's global variables in this session
        (off unless a game master allowed it)."""
        ids = await self._session(key)
        settings = (await self._settings(ids.session_id)).settings
        return settings.extra.get(TOOLS_GLOBAL_WRITES) is True

    async def set_tools_global_writes(self, key: SessionKey, allowed: bool) -> SessionInfo:
        """Allow or refuse the model's tool writes to the realm's global variables (a game
        master's decision: other sessions of the realm see those variables)."""
        info = await self.configure(key, **{TOOLS_GLOBAL_WRITES: bool(allowed)})
        self._emit("session.tools_global_writes", session=key.key, allowed=bool(allowed))
        return info

    async def current_branch(self, key: SessionKey) -> str:
        """The branch the session plays on when the platform does not name one."""
        return (await self.session_info(key)).current_branch

    async def set_current_branch(self, key: SessionKey, branch: str) -> None:
        """Switch the session's current branch; NotFoundError when it has no such branch."""
        ids = await self._session(key)
        await self._branch(ids.session_id, branch)  # raises when it does not exist
        await self._update(ids.session_id, **{CURRENT_BRANCH_SETTING: branch})

    # ----------------------------------------------------------------- assets
    async def list_assets(self, key: SessionKey, kind: AssetKind) -> list[str]:
        """Names of the realm's cards, presets, world books or regex sets."""
        ids = await self._session(key)
        return await self.assets.names(ids.realm_id, _realm_kind(kind))

    async def bind_asset(self, key: SessionKey, kind: AssetKind, name: str) -> SessionInfo:
        """Play a card, use a preset, attach a world book or a regex set of the realm."""
        ids = await self._session(key)
        realm_kind = _realm_kind(kind)
        if await self.assets.find(ids.realm_id, realm_kind, name) is None:
            raise NotFoundError(f"realm {key.realm} has no {kind} named {name!r}; import it first")
        settings = (await self._settings(ids.session_id)).settings
        changes: dict[str, Any]
        if realm_kind == "card":
            changes = {"character": name}
        elif realm_kind == "preset":
            changes = {"preset": name}
        elif realm_kind == "worldbook":
            changes = {"worldbooks": _added(settings.worldbooks, name)}
        else:
            changes = {"regex_sets": _added(settings.regex_sets, name)}
        await self._update(ids.session_id, **changes)
        self._emit("asset.bound", session=key.key, kind=kind, asset=name)
        return await self.session_info(key)

    async def unbind_asset(self, key: SessionKey, kind: AssetKind, name: str) -> SessionInfo:
        """Stop using an asset in the session (it stays in the realm); NotFoundError when
        the session does not use it."""
        ids = await self._session(key)
        realm_kind = _realm_kind(kind)
        settings = (await self._settings(ids.session_id)).settings
        bound: tuple[str, ...] = {
            "card": (settings.character,) if settings.character else (),
            "preset": (settings.preset,) if settings.preset else (),
            "worldbook": settings.worldbooks,
            "regex": settings.regex_sets,
        }[realm_kind]
        if name not in bound:
            raise NotFoundError(f"session {key.key} does not use the {kind} {name!r}")
        field = {
            "card": "character",
            "preset": "preset",
            "worldbook": "worldbooks",
            "regex": "regex_sets",
        }[realm_kind]
        rest = [n for n in bound if n != name]
        value: Any = rest if realm_kind in ("worldbook", "regex") else None
        await self._update(ids.session_id, **{field: value})
        self._emit("asset.unbound", session=key.key, kind=kind, asset=name)
        return await self.session_info(key)

    # ----------------------------------------------------------------- memory
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
        memory = self._memory_or_refuse()
        limit = max(0, min(limit, MAX_MEMORY_LIST))
        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        async with self.storage.unit_of_work() as uow:
            session: Session = await uow.sessions.get(ids.session_id)
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

    async def forget_memory(self, key: SessionKey, memory_id: str) -> None:
        """Forget a memory of this session or of its realm, on every branch; NotFoundError
        for an id that does not exist or belongs to another session or realm."""
        memory = self._memory_or_refuse()
        ids = await self._session(key)
        found = await memory.repo.get_records([memory_id])
        record = found[0] if found else None
        if (
            record is None
            or record.realm_id != str(ids.realm_id)
            or record.session_id not in (None, str(ids.session_id))
        ):
            raise NotFoundError(f"no memory {memory_id!r} in session {key.key}")
        await memory.forget(record.id, reason=f"forgotten from {key.platform}")

    def _memory_or_refuse(self) -> MemoryService:
        if self.memory is None:
            raise ConfigurationError("memory is not enabled in this tavernbot (no memory service)")
        return self.memory

    # ----------------------------------------------------------------- speakers
    async def floor_speakers(self, key: SessionKey, branch: str, floor: int) -> list[Speaker]:
        """Who wrote the input of floor ``floor`` as the branch sees it, each speaker once in
        the order they spoke; NotFoundError when the branch has no such floor."""
        ids = await self._session(key)
        target = await self._branch(ids.session_id, branch)
        async with self.storage.unit_of_work() as uow:
            found, _ = await locate_floor(uow, target, floor, None)
            messages = await uow.messages.of_floors([found.id])
        speakers: dict[str, Speaker] = {}
        for m in sorted(messages, key=lambda m: m.seq):
            if m.page_id is not None or m.role != "user":
                continue
            ident = m.speaker_id or m.speaker_name or ""
            if ident and ident not in speakers:
                speakers[ident] = Speaker(id=m.speaker_id or "", name=m.speaker_name or "User")
        return list(speakers.values())


_REALM_KINDS: Final[dict[str, RealmAssetKind]] = {
    "card": "card",
    "preset": "preset",
    "worldbook": "worldbook",
    "regex": "regex",
}


def _realm_kind(kind: str) -> RealmAssetKind:
    if kind in _REALM_KINDS:
        return _REALM_KINDS[kind]
    raise ConfigurationError(
        f"{kind!r} is not a realm asset (cards, presets, world books and regex sets are); "
        "an imported chat is a branch of its session"
    )


def _added(names: Sequence[str], name: str) -> list[str]:
    return list(names) if name in names else [*names, name]


def _memory_view(record: MemoryRecord) -> MemoryView:
    return MemoryView(
        id=record.id,
        kind=_MEMORY_KINDS[record.kind.value],
        text=record.display,
        scope=_MEMORY_SCOPES[record.scope.value],
        importance=record.importance,
    )


__all__ = [
    "CURRENT_BRANCH_SETTING",
    "MAX_MEMORY_LIST",
    "MAX_PERSONA_DESCRIPTION",
    "MAX_PERSONA_NAME",
    "FrontEndOps",
    "SessionClosedError",
]
