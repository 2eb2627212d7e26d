"""Assets of a realm: character cards, presets, world books and regex sets, stored as JSON and
unique by ``(realm, kind, name)``. Parsing and validating their content is ``engine.formats``'
job; this only keeps them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.ports import Storage
from engine.timeline.errors import TimelineNotFoundError
from engine.timeline.service import InvalidNameError, check_name
from engine.timeline.values import ASSET_KINDS, Asset, AssetKind


def _check_kind(kind: str) -> None:
    if kind not in ASSET_KINDS:
        raise InvalidNameError(f"asset kind {kind!r} is not one of {', '.join(ASSET_KINDS)}")


class AssetService:
    """Store and read a realm's assets."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    async def put(
        self, realm_id: int, kind: AssetKind, name: str, data: Mapping[str, Any]
    ) -> Asset:
        """Create the asset or replace its data."""
        _check_kind(kind)
        check_name(name, what=kind)
        async with self._storage.unit_of_work() as uow:
            await uow.realms.get(realm_id)
            return await uow.assets.put(realm_id=realm_id, kind=kind, name=name, data=data)

    async def get(self, realm_id: int, kind: AssetKind, name: str) -> Asset:
        """The asset; TimelineNotFoundError when the realm has none by that name."""
        _check_kind(kind)
        async with self._storage.read() as uow:
            found = await uow.assets.get(realm_id, kind, name)
        if found is None:
            raise TimelineNotFoundError(f"no {kind} named {name!r} in this realm")
        return found

    async def list(self, realm_id: int, kind: AssetKind | None = None) -> list[Asset]:
        """The realm's assets (of one kind), by kind and name."""
        if kind is not None:
            _check_kind(kind)
        async with self._storage.read() as uow:
            return await uow.assets.list(realm_id, kind)

    async def delete(self, realm_id: int, kind: AssetKind, name: str) -> bool:
        """Remove the asset; False when it did not exist."""
        _check_kind(kind)
        async with self._storage.unit_of_work() as uow:
            return await uow.assets.delete(realm_id, kind, name)
