"""Personas: who a player is in a realm. A persona is a realm asset of the internal kind
``persona``, named by the platform user id, holding ``{"name", "description"}``: every session
of the realm sees it, no other realm does. Its name is the player's ``{{user}}`` on the floors
they write; its description goes into their turns' prompts.

Personas are read through, never cached, so a persona set or cleared through another process
is what the next turn here uses: a new floor's speakers, and the answered speaker's
description, are read by their ids with the session's other assets in the unit of work that
opens the floor and reads the turn (:func:`persona_pairs`, :func:`name_lines`); a turn on an
existing floor reads the answered speaker's description with the turn (:func:`persona_of`). A
realm-wide cache would need a version read per turn anyway, which costs as much as these reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from engine.errors import ConfigurationError, NotFoundError
from engine.ports import EventSink, UnitOfWork
from engine.timeline.assets import AssetService
from engine.timeline.values import Asset, AssetKind
from engine.turns.api import SessionKey, Speaker, UserLine
from engine.turns.events import emit
from engine.turns.sessions import Sessions

__all__ = [
    "MAX_PERSONA_DESCRIPTION",
    "MAX_PERSONA_NAME",
    "PERSONA_ASSET",
    "Personas",
    "name_lines",
    "persona_of",
    "persona_pairs",
]

PERSONA_ASSET: Final = "persona"
"""Internal asset kind of personas (one asset per platform user id in a realm)."""
MAX_PERSONA_NAME: Final = 64
"""A persona name longer than this is refused (it is the ``{{user}}`` of every line)."""
MAX_PERSONA_DESCRIPTION: Final = 2_000
"""A persona description longer than this is refused."""


_KIND: Final[AssetKind] = PERSONA_ASSET  # type: ignore[assignment]


def _values(asset: Asset) -> tuple[str, str]:
    return str(asset.data.get("name", asset.name)), str(asset.data.get("description", ""))


async def persona_of(uow: UnitOfWork, realm_id: int, user_id: str | None) -> str:
    """Inside ``uow``: the description of platform user ``user_id``'s persona in the realm
    ("" when none). Only the id counts: a display name is anyone's to take, so another player
    named like a persona never gets its description."""
    if user_id is None:
        return ""
    found = await uow.assets.get(realm_id, _KIND, user_id)
    return _values(found)[1] if found is not None else ""


class Personas:
    """The personas of each realm (read through); setting, reading and clearing them."""

    def __init__(self, assets: AssetService, sessions: Sessions, *, events: EventSink) -> None:
        self._assets = assets
        self._sessions = sessions
        self._events = events

    async def set(self, key: SessionKey, user_id: str, name: str, description: str = "") -> None:
        """Set the persona ``user_id`` plays in the realm of ``key``. Empty or over-long
        values are refused."""
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
        ids = await self._sessions.ids(key)
        data = {"name": name, "description": description}
        await self._assets.put(ids.realm_id, PERSONA_ASSET, user_id, data)
        emit(self._events, "persona.set", realm=key.realm, user=user_id)

    async def get(self, key: SessionKey, user_id: str) -> tuple[str, str] | None:
        """``(name, description)`` of ``user_id`` in the realm of ``key``, or None."""
        ids = await self._sessions.ids(key)
        found = await self._assets.find(ids.realm_id, PERSONA_ASSET, user_id)
        return _values(found) if found is not None else None

    async def clear(self, key: SessionKey, user_id: str) -> None:
        """Drop ``user_id``'s persona in the realm of ``key``; NotFoundError when none."""
        ids = await self._sessions.ids(key)
        if not await self._assets.delete(ids.realm_id, PERSONA_ASSET, user_id):
            raise NotFoundError(f"user {user_id} has no persona in realm {key.realm}")


def persona_pairs(lines: Sequence[UserLine]) -> list[tuple[AssetKind, str]]:
    """The ``(kind, name)`` of the persona assets of ``lines``' speakers, for
    :func:`name_lines` (read with the turn's other assets in one statement)."""
    return [(_KIND, user_id) for user_id in sorted({line.speaker.id for line in lines})]


def name_lines(
    lines: Sequence[UserLine], found: Mapping[tuple[AssetKind, str], Asset]
) -> tuple[list[UserLine], dict[str, str]]:
    """``lines`` with each speaker named by their persona (``found``: the realm's assets
    read by kind and name, the :func:`persona_pairs` among them), and the persona
    description of every speaker of ``lines`` ("" when they have none)."""
    personas = {
        user_id: _values(asset)
        for _, user_id in persona_pairs(lines)
        if (asset := found.get((_KIND, user_id))) is not None
    }
    described = {line.speaker.id: personas.get(line.speaker.id, ("", ""))[1] for line in lines}
    return _named(lines, personas), described


def _named(lines: Sequence[UserLine], personas: dict[str, tuple[str, str]]) -> list[UserLine]:
    """``lines`` with each speaker named by their persona in ``personas``, where they have one."""
    out: list[UserLine] = []
    for line in lines:
        persona = personas.get(line.speaker.id)
        if persona is not None and persona[0] != line.speaker.name:
            speaker = Speaker(id=line.speaker.id, name=persona[0])
            line = UserLine(speaker=speaker, text=line.text, ref=line.ref)
        out.append(line)
    return out
