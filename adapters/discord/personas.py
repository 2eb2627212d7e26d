"""Per-user personas per realm: the name a human plays under (``{{user}}`` for their lines).

The service keeps personas (``set_persona`` / ``persona``), so they survive restarts and are
shared by every process. They are read through: :meth:`Personas.load` asks the service each
time (slash commands only; a message's speaker is named by the engine when it admits the
floor), so a persona set or cleared through another process is never shadowed by an old copy.
"""

from __future__ import annotations

from collections.abc import Iterable

from adapters.discord.convert import library_key
from engine.errors import NotFoundError
from engine.turns.api import RoleplayService, SessionKey

MAX_PERSONA_NAME = 64
MAX_PERSONA_DESCRIPTION = 2_000


class Personas:
    """Persona names by realm and user id, as the last :meth:`load` (or :meth:`set`) found."""

    def __init__(self, service: RoleplayService) -> None:
        self.service = service
        # Only what the current command loaded (see the module docstring): replaced by each
        # load, so it never grows past one command's users.
        self._found: dict[tuple[str, str], tuple[str, str]] = {}

    def names(self, realm: str) -> dict[str, str]:
        """User id -> persona name in ``realm`` (of the users the last load asked about)."""
        return {user: found[0] for (where, user), found in self._found.items() if where == realm}

    async def load(self, key: SessionKey, user_ids: Iterable[str]) -> None:
        """Ask the service for the personas of ``user_ids`` now (read through)."""
        self._found = {}
        for user_id in user_ids:
            try:
                found = await self.service.persona(key, user_id)
            except NotFoundError:  # no session here yet: nothing to ask
                continue
            if found is not None:
                self._found[(key.realm, user_id)] = found

    def describe(self, realm: str, user_id: str) -> tuple[str, str] | None:
        """The persona of ``user_id`` in ``realm`` as (name, description), as loaded."""
        return self._found.get((realm, user_id))

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
        self._found = {(key.realm, user_id): (name, description)}  # what was just stored
