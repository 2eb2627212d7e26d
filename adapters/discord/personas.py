"""Per-user personas per realm: the name a human plays under (``{{user}}`` for their lines).

The service has no persona call yet, so names are kept here (in memory, per realm) and applied
to each speaker; when the service offers ``set_persona`` it is called as well, so the engine can
use the description.
"""

from __future__ import annotations

from engine.turns.api import RoleplayService, SessionKey

MAX_PERSONA_NAME = 64
MAX_PERSONA_DESCRIPTION = 2_000


class Personas:
    """Persona names by realm and user id."""

    def __init__(self, service: RoleplayService) -> None:
        self.service = service
        self._names: dict[str, dict[str, str]] = {}
        self._descriptions: dict[tuple[str, str], str] = {}

    def names(self, realm: str) -> dict[str, str]:
        """User id -> persona name in ``realm``."""
        return self._names.get(realm, {})

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
        self._names.setdefault(key.realm, {})[user_id] = name
        self._descriptions[(key.realm, user_id)] = description
        setter = getattr(self.service, "set_persona", None)
        if setter is not None:
            await setter(key, user_id, name, description)
