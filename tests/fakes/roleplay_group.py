"""The fake service's group calls: speak and member management, kept in the session's
settings as the engine keeps them (the group object of :mod:`engine.group.settings`).

The fake plays no activation: ``respond`` answers with the session's character as before, and
``speak`` adds a floor with no input answered by the member called."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any, Protocol

from engine.errors import ConfigurationError, NotFoundError
from engine.formats.st_group import GROUP_FILE_SETTING, export_definition
from engine.group.settings import GROUP_SETTING, GroupSettings, group_of
from engine.turns.api import OnReply, OnText, ReplyView, SessionInfo, SessionKey
from tests.fakes.roleplay_state import FakeBranch, FakeFloor, FakeSession


class _Host(Protocol):
    """What the mixin uses of the fake it is mixed into."""

    calls: list[tuple[str, Any]]
    default_character: str

    def _session(self, key: SessionKey) -> FakeSession: ...
    def _branch(self, key: SessionKey, branch: str) -> FakeBranch: ...
    def _view(self, session: FakeSession, branch: FakeBranch) -> ReplyView: ...
    def _refuse_closed(self, session: FakeSession) -> None: ...
    async def session_info(self, key: SessionKey) -> SessionInfo: ...


def _members(session: FakeSession) -> tuple[str, ...]:
    group = group_of(session.settings.extra)
    if group is not None:
        return group.members
    return (session.character,) if session.character else ()


def _store(session: FakeSession, group: GroupSettings | None) -> None:
    extra = dict(session.settings.extra)
    extra[GROUP_SETTING] = group.to_json() if group is not None else None
    session.settings = replace(session.settings, extra=extra)


def _group(session: FakeSession) -> GroupSettings:
    group = group_of(session.settings.extra)
    if group is None:
        raise ConfigurationError(f"session {session.key.key} plays one character")
    return group


class FakeGroupCalls:
    """Group calls of the fake service (mixed into it)."""

    async def speak(
        self: _Host,
        key: SessionKey,
        branch: str,
        name: str,
        *,
        on_text: OnText | None = None,
        on_reply: OnReply | None = None,
    ) -> ReplyView:
        self.calls.append(("speak", (key, branch, name)))
        session = self._session(key)
        self._refuse_closed(session)
        if name not in _members(session):
            raise NotFoundError(f"{name} is not a character of session {key.key}")
        target = self._branch(key, branch)
        text = f"{name}: I speak."
        if on_text is not None:
            await on_text(text)
        target.floors.append(FakeFloor(lines=[], pages=[text], page_vars=[{}]))
        view = replace(self._view(session, target), character=name)
        if on_reply is not None:
            await on_reply(view)
        return view

    async def add_member(self: _Host, key: SessionKey, name: str) -> SessionInfo:
        self.calls.append(("add_member", (key, name)))
        session = self._session(key)
        members = _members(session)
        if name in members:
            raise ConfigurationError(f"{name} already plays in session {key.key}")
        if not members:
            session.character = name
        else:
            group = group_of(session.settings.extra) or GroupSettings(members=members)
            _store(session, replace(group, members=(*group.members, name)))
        return await self.session_info(key)

    async def remove_member(self: _Host, key: SessionKey, name: str) -> SessionInfo:
        self.calls.append(("remove_member", (key, name)))
        session = self._session(key)
        group = _group(session)
        if name not in group.members:
            raise NotFoundError(f"{name} is not a character of session {key.key}")
        rest = tuple(n for n in group.members if n != name)
        if session.character not in rest:
            session.character = rest[0]
        muted = tuple(n for n in group.muted if n != name)
        _store(session, None if len(rest) == 1 else replace(group, members=rest, muted=muted))
        return await self.session_info(key)

    async def mute_member(self: _Host, key: SessionKey, name: str, muted: bool) -> SessionInfo:
        self.calls.append(("mute_member", (key, name, muted)))
        session = self._session(key)
        group = _group(session)
        kept = tuple(n for n in group.muted if n != name)
        _store(session, replace(group, muted=(*kept, name) if muted else kept))
        return await self.session_info(key)

    async def set_group_strategy(self: _Host, key: SessionKey, strategy: str) -> SessionInfo:
        self.calls.append(("set_group_strategy", (key, strategy)))
        session = self._session(key)
        _store(session, replace(_group(session), strategy=strategy))  # type: ignore[arg-type]
        return await self.session_info(key)

    async def export_group(self: _Host, key: SessionKey) -> bytes:
        self.calls.append(("export_group", key))
        session = self._session(key)
        group = group_of(session.settings.extra)
        if group is None:
            raise NotFoundError(f"session {key.key} plays one character")
        kept = session.settings.extra.get(GROUP_FILE_SETTING)
        return json.dumps(export_definition(group, kept, new_id="1")).encode()

    async def set_group_mode(self: _Host, key: SessionKey, mode: str) -> SessionInfo:
        self.calls.append(("set_group_mode", (key, mode)))
        session = self._session(key)
        _store(session, replace(_group(session), mode=mode))  # type: ignore[arg-type]
        return await self.session_info(key)
