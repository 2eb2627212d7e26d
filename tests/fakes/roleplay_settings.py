"""The fake service's session settings and personas (a mixin of
:class:`tests.fakes.roleplay.FakeRoleplayService`, kept apart to keep that module small):
options, the Author's Note and global writes are parsed and checked by the engine's own rules,
so answers and refusals read as the real service's do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from engine.errors import ConfigurationError, NotFoundError
from engine.prompt.inputs import AuthorNote
from engine.timeline.values import SessionSettings
from engine.turns.api import OptionSpec, SessionInfo, SessionKey, SessionState
from engine.turns.notes import check_note
from engine.turns.options import SESSION_OPTION_SPECS, option_changes
from tests.fakes.roleplay_state import FakeSession


class _Host(Protocol):
    """What the mixin uses of the fake it is mixed into."""

    calls: list[tuple[str, Any]]
    personas: dict[tuple[str, str], tuple[str, str]]
    sessions: dict[SessionKey, FakeSession]

    def _session(self, key: SessionKey) -> FakeSession: ...
    async def session_info(self, key: SessionKey) -> SessionInfo: ...


class FakeSessionSettings:
    """Session options, the Author's Note, global writes and personas of the fake service."""

    async def session_state(self: _Host, key: SessionKey) -> SessionState | None:
        """The session's row as front ends check it per message (None: no session)."""
        session = self.sessions.get(key)
        if session is None:
            return None
        return SessionState(
            key=key,
            closed=session.closed,
            character=session.character,
            reply_policy=session.settings.reply_policy,  # type: ignore[arg-type]
            current_branch=session.current_branch,
        )

    async def set_session_option(
        self: _Host, key: SessionKey, name: str, value: str
    ) -> SessionInfo:
        """Parsed and stored by the engine's own rules, so answers and refusals read as the
        real service's do."""
        self.calls.append(("set_session_option", (key, name, value)))
        session = self._session(key)
        _change(session, option_changes(session.settings, name, value))
        return await self.session_info(key)

    def session_option_specs(self) -> tuple[OptionSpec, ...]:
        return SESSION_OPTION_SPECS

    async def author_note(self: _Host, key: SessionKey) -> AuthorNote | None:
        return self._session(key).note

    async def set_author_note(
        self: _Host, key: SessionKey, note: AuthorNote | None
    ) -> SessionInfo:
        """Checked by the engine's own rules, so refusals read as the real service's do."""
        self.calls.append(("set_author_note", (key, note)))
        session = self._session(key)
        session.note = check_note(note) if note is not None else None
        return await self.session_info(key)

    async def tools_global_writes(self: _Host, key: SessionKey) -> bool:
        return self._session(key).settings.extra.get("tools_global_writes") is True

    async def set_tools_global_writes(self: _Host, key: SessionKey, allowed: bool) -> SessionInfo:
        self.calls.append(("set_tools_global_writes", (key, allowed)))
        _change(self._session(key), {"tools_global_writes": bool(allowed)})
        return await self.session_info(key)

    async def set_persona(
        self: _Host, key: SessionKey, user_id: str, name: str, description: str = ""
    ) -> None:
        self.calls.append(("set_persona", (key, user_id, name, description)))
        self._session(key)
        if not name.strip():
            raise ConfigurationError("a persona needs a name")
        self.personas[(key.realm, user_id)] = (name.strip(), description.strip())

    async def persona(self: _Host, key: SessionKey, user_id: str) -> tuple[str, str] | None:
        return self.personas.get((key.realm, user_id))

    async def clear_persona(self: _Host, key: SessionKey, user_id: str) -> None:
        if self.personas.pop((key.realm, user_id), None) is None:
            raise NotFoundError(f"user {user_id} has no persona in realm {key.realm}")


def _change(session: FakeSession, changes: Mapping[str, Any]) -> None:
    """Store ``changes`` in the session's settings as the engine stores them (one JSON object)."""
    data = session.settings.to_json()
    data.update(changes)
    session.settings = SessionSettings.from_json(data)
