"""Which of its realm's assets a session uses: listing the realm's cards, presets, world books
and regex sets, binding or unbinding one in the session's settings, and a card's picture (for
the front ends that show a character with its avatar). Importing a file is
:mod:`engine.turns.transfer`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from engine.errors import ConfigurationError, FormatError, NotFoundError
from engine.formats.cards import card_from_asset
from engine.ports import EventSink
from engine.timeline.assets import AssetService
from engine.timeline.values import Asset
from engine.timeline.values import AssetKind as RealmAssetKind
from engine.turns.api import AssetKind, SessionInfo, SessionKey
from engine.turns.events import emit
from engine.turns.parsed_assets import ParsedAssets
from engine.turns.sessions import Sessions

__all__ = ["Assets"]

_REALM_KINDS: Final[dict[str, RealmAssetKind]] = {
    "card": "card",
    "preset": "preset",
    "worldbook": "worldbook",
    "regex": "regex",
}
_FIELDS: Final[dict[RealmAssetKind, str]] = {
    "card": "character",
    "preset": "preset",
    "worldbook": "worldbooks",
    "regex": "regex_sets",
}
"""The session setting that names the bound asset(s) of each kind."""
PICTURE_CACHE_SIZE: Final = 16
"""Card pictures kept decoded between replies at most (a picture may weigh megabytes)."""


class Assets:
    """The realm's assets by name, and the ones a session uses."""

    def __init__(self, sessions: Sessions, assets: AssetService, *, events: EventSink) -> None:
        self._sessions = sessions
        self._assets = assets
        self._events = events
        # Decoded once per stored version of a card: a front end asks for each reply.
        self._pictures = ParsedAssets(PICTURE_CACHE_SIZE)

    async def names(self, key: SessionKey, kind: AssetKind) -> list[str]:
        """Names of the realm's cards, presets, world books or regex sets."""
        ids = await self._sessions.ids(key)
        return await self._assets.names(ids.realm_id, _realm_kind(kind))

    async def bind(self, key: SessionKey, kind: AssetKind, name: str) -> SessionInfo:
        """Play a card, use a preset, attach a world book or a regex set of the realm."""
        ids = await self._sessions.ids(key)
        realm_kind = _realm_kind(kind)
        if await self._assets.find(ids.realm_id, realm_kind, name) is None:
            raise NotFoundError(f"realm {key.realm} has no {kind} named {name!r}; import it first")
        settings = (await self._sessions.settings(ids.session_id)).settings
        value: Any = name
        if realm_kind == "worldbook":
            value = _added(settings.worldbooks, name)
        elif realm_kind == "regex":
            value = _added(settings.regex_sets, name)
        await self._sessions.update(ids.session_id, **{_FIELDS[realm_kind]: value})
        emit(self._events, "asset.bound", session=key.key, kind=kind, asset=name)
        return await self._sessions.info(key)

    async def unbind(self, key: SessionKey, kind: AssetKind, name: str) -> SessionInfo:
        """Stop using an asset in the session (it stays in the realm); NotFoundError when
        the session does not use it."""
        ids = await self._sessions.ids(key)
        realm_kind = _realm_kind(kind)
        settings = (await self._sessions.settings(ids.session_id)).settings
        bound: tuple[str, ...] = {
            "card": (settings.character,) if settings.character else (),
            "preset": (settings.preset,) if settings.preset else (),
            "worldbook": settings.worldbooks,
            "regex": settings.regex_sets,
        }[realm_kind]
        if name not in bound:
            raise NotFoundError(f"session {key.key} does not use the {kind} {name!r}")
        rest = [n for n in bound if n != name]
        value: Any = rest if realm_kind in ("worldbook", "regex") else None
        await self._sessions.update(ids.session_id, **{_FIELDS[realm_kind]: value})
        emit(self._events, "asset.unbound", session=key.key, kind=kind, asset=name)
        return await self._sessions.info(key)

    async def picture(self, key: SessionKey, name: str) -> bytes | None:
        """The picture (PNG bytes, without the card's own chunks) of the realm's card
        ``name``; None when the card came without one (a JSON card) or the realm has no card
        of that name (a character without a card, such as the narrator)."""
        ids = await self._sessions.ids(key)
        asset = await self._assets.find(ids.realm_id, "card", name)
        if asset is None:
            return None
        return self._pictures.get(asset, _picture)


def _picture(asset: Asset) -> bytes | None:
    try:
        return card_from_asset(asset.data, source=f"card {asset.name}").avatar
    except FormatError:
        # A stored card that no longer reads is reported where it is played; a picture
        # is only decoration, so it is simply absent here.
        return None


def _realm_kind(kind: str) -> RealmAssetKind:
    if kind in _REALM_KINDS:
        return _REALM_KINDS[kind]
    raise ConfigurationError(
        f"{kind!r} is not a realm asset (cards, presets, world books and regex sets are); "
        "an imported chat is a branch of its session"
    )


def _added(names: Sequence[str], name: str) -> list[str]:
    return list(names) if name in names else [*names, name]
