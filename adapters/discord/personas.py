"""Per-user personas per realm: the name a human plays under (``{{user}}`` for their lines).

The service keeps personas (``set_persona`` / ``persona``), so they survive restarts; names are
cached here per realm and applied to each speaker, and a user not seen since the bot started is
looked up once.
"""

from __future__ import annotations

from collections.abc import Iterable

from adapters.discord.convert import library_key
from engine.errors import NotFoundError
from engine.turns.api import RoleplayService, SessionKey

MAX_PERSONA_NAME = 64
MAX_PERSONA_DESCRIPTION = 2_000
MAX_LOOKED_UP = 100_000  # (realm, user) pairs asked of the service; forgotten past this


class Personas:
    """Persona names by realm and user id."""

    def __init__(self, service: RoleplayService) -> None:
        self.service = service
        self._names: dict[str, dict[str, str]] = {}
        self._descriptions: dict[tuple[str, str], str] = {}
        self._looked_up: set[tuple[str, str]] = set()

    def names(self, realm: str) -> dict[str, str]:
        """User id -> persona name in ``realm``."""
        return self._names.get(realm, {})

    async def load(self, key: SessionKey, user_ids: Iterable[str]) -> None:
        """Ask the service (once per user and realm) for personas not cached yet."""
        for user_id in user_ids:
            where = (key.realm, user_id)
            if where in self._looked_up or user_id in self._names.get(key.realm, {}):
                continue
            if len(self._looked_up) >= MAX_LOOKED_UP:
                self._looked_up.clear()
            self._looked_up.add(where)
            try:
                found = await self.service.persona(key, user_id)
            except NotFoundError:  # no session here yet: nothing to ask
                self._looked_up.discard(where)
                continue
            if found is not None:
                name, description = found
                self._names.setdefault(key.realm, {})[user_id] = name
                self._descriptions[where] = description

    def describe(self, realm: str, user_id: str) -> tuple[str, str] | None:
        """The persona of ``user_id`` in ``realm`` as (name, description)."""
        name = self._names.get(realm, {}).get(user_id)
        if name is None:
            return None
        return name, self._descriptions.get((realm, user_id), "")

    async def set(self, key: SessionKey, user_id: str, name: str, description: str) -> None:
        """Set a user's persona in the realm of ``key`` (names and descriptions are capped)."""
        name = name.strip()[:MAX_PERSONA_NAME]
        description = description.strip()[:MAX_PERSONA_DESCRIPTION]
        try:
            await self.service.set_persona(key, user_id, name, description)
        except NotFoundError:
            # A channel without a session: personas are the realm's, so the realm's library
            # session takes it.
            library = library_key(key.realm)
            await self.service.open_session(library)
            await self.service.set_persona(library, user_id, name, description)
        # Cached only once stored, so a refused persona is not applied either.
        self._names.setdefault(key.realm, {})[user_id] = name
        self._descriptions[(key.realm, user_id)] = description
