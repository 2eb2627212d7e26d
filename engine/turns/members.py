"""A session's group: adding, removing and muting members, its strategy and its mode.

The group lives in the session's settings (:data:`~engine.group.settings.GROUP_SETTING`,
read by :func:`~engine.group.settings.group_of`); a session without one is solo and plays its
``character``. Adding a second card makes a solo session a group whose first member is that
character; removing members down to one makes it solo again, playing the one left (so every
solo path stays the one it was). Members are names of cards imported into the session's realm.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from engine.errors import ConfigurationError, NotFoundError
from engine.group.settings import GROUP_SETTING, GroupSettings, group_of
from engine.ports import EventSink
from engine.timeline.assets import AssetService
from engine.timeline.values import SessionSettings
from engine.turns.api import SessionInfo, SessionKey
from engine.turns.events import emit
from engine.turns.sessions import Sessions

__all__ = ["Members", "find_name"]


def find_name(names: Sequence[str], name: str) -> str | None:
    """The name in ``names`` that ``name`` means: the same name, else the only one equal to it
    ignoring case (``/group speak mira`` finds Mira); None when there is none."""
    if name in names:
        return name
    folded = [n for n in names if n.casefold() == name.strip().casefold()]
    return folded[0] if len(folded) == 1 else None


def members_of(settings: SessionSettings) -> tuple[str, ...]:
    """The characters a session plays: its group's members, or its one character."""
    group = group_of(settings.extra)
    if group is not None:
        return group.members
    return (settings.character,) if settings.character else ()


def member(settings: SessionSettings, name: str, *, where: str) -> str:
    """The character of the session ``name`` means (see :func:`find_name`)."""
    return named(members_of(settings), name, where=where)


def named(members: Sequence[str], name: str, *, where: str) -> str:
    """The member ``name`` means (see :func:`find_name`); NotFoundError naming them."""
    found = find_name(members, name)
    if found is None:
        listed = ", ".join(members) if members else "none"
        raise NotFoundError(f"{name} is not a character of {where} (its characters: {listed})")
    return found


class Members:
    """Changes to a session's group (game-master writes in the front ends)."""

    def __init__(self, sessions: Sessions, assets: AssetService, *, events: EventSink) -> None:
        self._sessions = sessions
        self._assets = assets
        self._events = events

    async def add(self, key: SessionKey, name: str) -> SessionInfo:
        """Add the realm's card ``name``; NotFoundError naming the realm's cards when it has
        no such card, ConfigurationError when it already plays."""
        ids = await self._sessions.ids(key)
        cards = await self._assets.names(ids.realm_id, "card")
        card = find_name(cards, name)
        if card is None:
            listed = ", ".join(sorted(cards)) if cards else "none; import one first"
            raise NotFoundError(
                f"realm {key.realm} has no card named {name!r} (its cards: {listed})"
            )
        settings = (await self._sessions.settings(ids.session_id)).settings
        members = members_of(settings)
        if card in members:
            raise ConfigurationError(f"{card} already plays in session {key.key}")
        if not members:  # a session with no character yet simply plays this one
            await self._sessions.update(ids.session_id, character=card)
        else:
            group = group_of(settings.extra) or GroupSettings(members=members)
            await self._store(ids.session_id, replace(group, members=(*group.members, card)))
        emit(self._events, "group.changed", session=key.key, added=card)
        return await self._sessions.info(key)

    async def remove(self, key: SessionKey, name: str) -> SessionInfo:
        """Take a member out; the last character cannot be removed (unbind the card)."""
        ids = await self._sessions.ids(key)
        settings = (await self._sessions.settings(ids.session_id)).settings
        gone = member(settings, name, where=f"session {key.key}")
        group = group_of(settings.extra)
        if group is None:
            raise ConfigurationError(
                f"{gone} is the only character of session {key.key}; it cannot be removed"
            )
        rest = tuple(n for n in group.members if n != gone)
        changes: dict[str, object] = {}
        if settings.character not in rest:
            changes["character"] = rest[0]  # the solo character is the first member
        if len(rest) == 1:
            changes[GROUP_SETTING] = None  # one character left: a solo session again
        else:
            muted = tuple(n for n in group.muted if n != gone)
            changes[GROUP_SETTING] = replace(group, members=rest, muted=muted).to_json()
        await self._sessions.update(ids.session_id, **changes)
        emit(self._events, "group.changed", session=key.key, removed=gone)
        return await self._sessions.info(key)

    async def mute(self, key: SessionKey, name: str, muted: bool) -> SessionInfo:
        """Mute (or unmute) a member of the group."""
        ids, group = await self._group(key)
        name = named(group.members, name, where=f"session {key.key}")
        kept = tuple(n for n in group.muted if n != name)
        now = (*kept, name) if muted else kept
        await self._store(ids, replace(group, muted=now))
        emit(self._events, "group.changed", session=key.key, muted=name, value=muted)
        return await self._sessions.info(key)

    async def set_strategy(self, key: SessionKey, strategy: str) -> SessionInfo:
        """Set the activation strategy; ConfigurationError naming the strategies."""
        ids, group = await self._group(key)
        await self._store(ids, replace(group, strategy=strategy.strip().lower()))  # type: ignore[arg-type]
        emit(self._events, "group.changed", session=key.key, strategy=strategy)
        return await self._sessions.info(key)

    async def set_mode(self, key: SessionKey, mode: str) -> SessionInfo:
        """Set the generation mode; ConfigurationError naming the modes."""
        ids, group = await self._group(key)
        await self._store(ids, replace(group, mode=mode.strip().lower()))  # type: ignore[arg-type]
        emit(self._events, "group.changed", session=key.key, mode=mode)
        return await self._sessions.info(key)

    async def _group(self, key: SessionKey) -> tuple[int, GroupSettings]:
        ids = await self._sessions.ids(key)
        settings = (await self._sessions.settings(ids.session_id)).settings
        group = group_of(settings.extra)
        if group is None:
            raise ConfigurationError(
                f"session {key.key} plays one character; add a second one to make a group"
            )
        return ids.session_id, group

    async def _store(self, session_id: int, group: GroupSettings) -> None:
        await self._sessions.update(session_id, **{GROUP_SETTING: group.to_json()})
