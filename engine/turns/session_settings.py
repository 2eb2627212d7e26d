"""A session's settings as users change them: ``configure`` (checked), the options of
:mod:`engine.turns.options` by their user-facing names, the Author's Note and whether the
model's tools may write global variables.

All of these are keys of the session's settings JSON (``tools``, ``memory``,
``memory_budget``, ``reply_policy``, ``author_note``, ``tools_global_writes``, ...); no table of
their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from engine.errors import ConfigurationError
from engine.ports import EventSink
from engine.prompt.inputs import AuthorNote
from engine.turns.api import SessionInfo, SessionKey
from engine.turns.events import emit
from engine.turns.notes import AUTHOR_NOTE, check_note_setting, note_to_json, session_note
from engine.turns.options import (
    MAX_MEMORY_BUDGET,
    MEMORY_BUDGET,
    MEMORY_SETTING,
    SESSION_OPTION_SPECS,
    OptionSpec,
    option_changes,
    option_spec,
)
from engine.turns.profiles import SLOTS
from engine.turns.sessions import Sessions
from engine.turns.tools import TOOLS_GLOBAL_WRITES, ToolPolicy

__all__ = ["SessionSettingsService", "check_settings"]

_WORDS: Final[Mapping[str, str]] = {
    "prompt_mode": "mode",
    "macro_mode": "macros",
    "reply_policy": "policy",
}
"""Session settings that hold one word of an option of :data:`SESSION_OPTION_SPECS`."""


class SessionSettingsService:
    """Checked changes of a session's settings, by setting or by option name."""

    def __init__(self, sessions: Sessions, *, events: EventSink) -> None:
        self._sessions = sessions
        self._events = events

    async def configure(self, key: SessionKey, **changes: Any) -> SessionInfo:
        """Change session settings: ``prompt_mode``, ``macro_mode``, ``character``, ``preset``,
        and extra keys such as ``slots`` (enabled instance slots), ``tools`` (policy),
        ``memory`` (on/off), ``memory_budget`` and ``author_note`` (stored form of
        :mod:`engine.turns.notes`; None clears it)."""
        check_settings(changes)
        ids = await self._sessions.ids(key)
        await self._sessions.update(ids.session_id, **changes)
        return await self._sessions.info(key)

    async def set_option(self, key: SessionKey, name: str, value: str) -> SessionInfo:
        """Set one option of :data:`~engine.turns.options.SESSION_OPTION_SPECS` by its
        user-facing name; ConfigurationError, one line, for an unknown option or value."""
        ids = await self._sessions.ids(key)
        settings = (await self._sessions.settings(ids.session_id)).settings
        info = await self.configure(key, **option_changes(settings, name, value))
        emit(self._events, "session.option", session=key.key, option=name, value=str(value))
        return info

    def option_specs(self) -> tuple[OptionSpec, ...]:
        """Every option :meth:`set_option` takes, with its values and help."""
        return SESSION_OPTION_SPECS

    async def author_note(self, key: SessionKey) -> AuthorNote | None:
        """The session's Author's Note, or None when it has none."""
        ids = await self._sessions.ids(key)
        return session_note((await self._sessions.settings(ids.session_id)).settings)

    async def set_author_note(self, key: SessionKey, note: AuthorNote | None) -> SessionInfo:
        """Set the session's Author's Note (None clears it); nothing is stored when a value is
        out of range."""
        stored = note_to_json(note) if note is not None else None
        info = await self.configure(key, **{AUTHOR_NOTE: stored})
        emit(self._events, "session.author_note", session=key.key, cleared=note is None)
        return info

    async def tools_global_writes(self, key: SessionKey) -> bool:
        """Whether the model's tools may write the realm's global variables in this session."""
        ids = await self._sessions.ids(key)
        settings = (await self._sessions.settings(ids.session_id)).settings
        return settings.extra.get(TOOLS_GLOBAL_WRITES) is True

    async def set_tools_global_writes(self, key: SessionKey, allowed: bool) -> SessionInfo:
        """Allow or refuse the model's tool writes to the realm's global variables."""
        info = await self.configure(key, **{TOOLS_GLOBAL_WRITES: bool(allowed)})
        emit(self._events, "session.tools_global_writes", session=key.key, allowed=bool(allowed))
        return info


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
