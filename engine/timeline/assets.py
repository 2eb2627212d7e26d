"""Assets of a realm: character cards, presets, world books and regex sets, stored as JSON and
unique by ``(realm, kind, name)``. Parsing and validating their content is ``engine.formats``'
job; this only keeps them.

The engine keeps two more kinds in the same table (:data:`INTERNAL_ASSET_KINDS`): ``profile``
(the realm's LLM profiles) and ``persona`` (one per platform user). They are accepted here but
left out of :meth:`AssetService.names`, which is what users are shown."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, cast

from engine.ports import Storage
from engine.timeline.checks import check_name
from engine.timeline.errors import InvalidNameError, TimelineNotFoundError
from engine.timeline.values import (
    ASSET_KINDS,
    STORED_ASSET_KINDS,
    Asset,
    AssetKind,
    StoredAssetKind,
)


def _check_kind(kind: str) -> AssetKind:
    if kind not in STORED_ASSET_KINDS:
        raise InvalidNameError(
            f"asset kind {kind!r} is not one of {', '.join(STORED_ASSET_KINDS)}"
        )
    # The storage port is typed with the user-facing kinds; its table takes any kind name.
    return cast(AssetKind, kind)


class AssetService:
    """Store and read a realm's assets."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    async def put(
        self, realm_id: int, kind: StoredAssetKind, name: str, data: Mapping[str, Any]
    ) -> Asset:
        """Create the asset or replace its data."""
        stored = _check_kind(kind)
        check_name(name, what=kind)
        async with self._storage.unit_of_work() as uow:
            await uow.realms.get(realm_id)
            return await uow.assets.put(realm_id=realm_id, kind=stored, name=name, data=data)

    async def find(self, realm_id: int, kind: StoredAssetKind, name: str) -> Asset | None:
        """The asset, or None when the realm has none by that name."""
        stored = _check_kind(kind)
        async with self._storage.read() as uow:
            return await uow.assets.get(realm_id, stored, name)

    async def get(self, realm_id: int, kind: StoredAssetKind, name: str) -> Asset:
        """The asset; TimelineNotFoundError when the realm has none by that name."""
        found = await self.find(realm_id, kind, name)
        if found is None:
            raise TimelineNotFoundError(f"no {kind} named {name!r} in this realm")
        return found

    async def list(self, realm_id: int, kind: StoredAssetKind | None = None) -> list[Asset]:
        """The realm's assets (of one kind), by kind and name."""
        stored = _check_kind(kind) if kind is not None else None
        async with self._storage.read() as uow:
            return await uow.assets.list(realm_id, stored)

    async def names(self, realm_id: int, kind: AssetKind) -> builtins.list[str]:
        """Names of the realm's assets of one user-facing kind (never profiles or personas)."""
        if kind not in ASSET_KINDS:
            raise InvalidNameError(f"asset kind {kind!r} is not one of {', '.join(ASSET_KINDS)}")
        return [asset.name for asset in await self.list(realm_id, kind)]

    async def delete(self, realm_id: int, kind: StoredAssetKind, name: str) -> bool:
        """Remove the asset; False when it did not exist."""
        stored = _check_kind(kind)
        async with self._storage.unit_of_work() as uow:
            return await uow.assets.delete(realm_id, stored, name)
