"""Personas: who a player is in a realm. A persona is a realm asset of the internal kind
``persona``, named by the platform user id, holding ``{"name", "description"}``: every session
of the realm sees it, no other realm does. Its name is the player's ``{{user}}`` on the floors
they write; its description goes into their turns' prompts.

Personas are cached per realm and process (read once, updated by the calls here), so a turn
costs no extra round trip; another process changing them is seen after a restart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from engine.errors import ConfigurationError, NotFoundError
from engine.ports import EventSink
from engine.timeline.assets import AssetService
from engine.turns.api import SessionKey, Speaker, UserLine
from engine.turns.events import emit
from engine.turns.sessions import Sessions

__all__ = ["MAX_PERSONA_DESCRIPTION", "MAX_PERSONA_NAME", "PERSONA_ASSET", "Personas"]

PERSONA_ASSET: Final = "persona"
"""Internal asset kind of personas (one asset per platform user id in a realm)."""
MAX_PERSONA_NAME: Final = 64
"""A persona name longer than this is refused (it is the ``{{user}}`` of every line)."""
MAX_PERSONA_DESCRIPTION: Final = 2_000
"""A persona description longer than this is refused."""


class Personas:
    """The personas of each realm, cached; setting, reading and clearing them."""

    def __init__(self, assets: AssetService, sessions: Sessions, *, events: EventSink) -> None:
        self._assets = assets
        self._sessions = sessions
        self._events = events
        self._by_realm: dict[int, dict[str, tuple[str, str]]] = {}

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
        (await self._of_realm(ids.realm_id))[user_id] = (name, description)
        emit(self._events, "persona.set", realm=key.realm, user=user_id)

    async def get(self, key: SessionKey, user_id: str) -> tuple[str, str] | None:
        """``(name, description)`` of ``user_id`` in the realm of ``key``, or None."""
        ids = await self._sessions.ids(key)
        return (await self._of_realm(ids.realm_id)).get(user_id)

    async def clear(self, key: SessionKey, user_id: str) -> None:
        """Drop ``user_id``'s persona in the realm of ``key``; NotFoundError when none."""
        ids = await self._sessions.ids(key)
        if not await self._assets.delete(ids.realm_id, PERSONA_ASSET, user_id):
            raise NotFoundError(f"user {user_id} has no persona in realm {key.realm}")
        (await self._of_realm(ids.realm_id)).pop(user_id, None)

    async def description(self, realm_id: int, user_id: str | None) -> str:
        """The description of the persona of platform user ``user_id`` in the realm ("" when
        none). Only the id counts: a display name is anyone's to take, so another player named
        like a persona never gets its description."""
        if user_id is None:
            return ""
        found = (await self._of_realm(realm_id)).get(user_id)
        return found[1] if found is not None else ""

    async def name_speakers(self, realm_id: int, lines: Sequence[UserLine]) -> list[UserLine]:
        """The lines with each speaker named by their persona, where they have one."""
        personas = await self._of_realm(realm_id)
        out: list[UserLine] = []
        for line in lines:
            persona = personas.get(line.speaker.id)
            if persona is not None and persona[0] != line.speaker.name:
                speaker = Speaker(id=line.speaker.id, name=persona[0])
                line = UserLine(speaker=speaker, text=line.text, ref=line.ref)
            out.append(line)
        return out

    async def _of_realm(self, realm_id: int) -> dict[str, tuple[str, str]]:
        found = self._by_realm.get(realm_id)
        if found is None:
            found = {
                a.name: (str(a.data.get("name", a.name)), str(a.data.get("description", "")))
                for a in await self._assets.list(realm_id, PERSONA_ASSET)
            }
            self._by_realm[realm_id] = found
        return found
