"""Where LLM profiles and their bindings are kept: one JSON asset per realm.

The asset (kind ``profile``, name ``llm``) holds ``{"profiles": {id: {...}}, "bindings":
[...]}``. Session bindings name the session by its database id, realm bindings the realm by
its id, so :func:`snapshot_for` resolves a turn with :mod:`engine.turns.profiles`. API keys are
stored only as ciphertext (``api_key_encrypted``) or as the name of an environment variable.
:class:`ProfileStore` is the service that saves, binds and resolves them for a session.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from engine.errors import ConfigurationError
from engine.ports import Storage
from engine.timeline.values import Session
from engine.turns.api import SessionKey
from engine.turns.parsed_assets import PROFILE_ASSET, PROFILE_ASSET_NAME
from engine.turns.profiles import (
    SLOTS,
    BindingScope,
    LLMProfile,
    ProfileBinding,
    ProfileSnapshot,
    SecretCipher,
    Slot,
    SlotPattern,
    snapshot_profiles,
)
from engine.turns.sessions import Sessions


def profile_to_json(profile: LLMProfile) -> dict[str, Any]:
    """A profile as stored (the key only as ciphertext or reference)."""
    return {
        "id": profile.id,
        "name": profile.name,
        "provider": profile.provider,
        "base_url": profile.base_url,
        "model": profile.model,
        "api_key_encrypted": profile.api_key_encrypted,
        "api_key_ref": profile.api_key_ref,
        "sampling": dict(profile.sampling),
        "max_tokens": profile.max_tokens,
        "timeout_s": profile.timeout_s,
        "max_retries": profile.max_retries,
    }


def profile_from_json(data: Mapping[str, Any]) -> LLMProfile:
    """A stored profile (ConfigurationError when it is malformed)."""
    try:
        return LLMProfile(
            id=str(data["id"]),
            name=str(data.get("name") or ""),
            provider=data.get("provider", "openai"),
            base_url=data.get("base_url"),
            model=str(data["model"]),
            api_key_encrypted=data.get("api_key_encrypted"),
            api_key_ref=data.get("api_key_ref"),
            sampling=dict(data.get("sampling") or {}),
            max_tokens=data.get("max_tokens"),
            timeout_s=float(data.get("timeout_s", 120.0)),
            max_retries=int(data.get("max_retries", 3)),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigurationError(f"stored LLM profile is malformed: {exc}") from exc


def bindings_from_json(data: Mapping[str, Any]) -> list[ProfileBinding]:
    """The stored bindings."""
    out: list[ProfileBinding] = []
    for item in data.get("bindings") or ():
        out.append(
            ProfileBinding(
                scope=item["scope"],
                scope_id=str(item["scope_id"]),
                slot=item["slot"],
                profile_id=str(item["profile_id"]),
            )
        )
    return out


def with_profile(data: Mapping[str, Any], profile: LLMProfile) -> dict[str, Any]:
    """The asset data with ``profile`` added or replaced."""
    profiles = dict(data.get("profiles") or {})
    profiles[profile.id] = profile_to_json(profile)
    return {**data, "profiles": profiles}


def with_binding(data: Mapping[str, Any], binding: ProfileBinding) -> dict[str, Any]:
    """The asset data with ``binding`` set (replacing the same scope, owner and slot)."""
    if binding.profile_id not in (data.get("profiles") or {}):
        raise ConfigurationError(f"no LLM profile {binding.profile_id!r} to bind")
    kept = [
        b
        for b in data.get("bindings") or ()
        if (b["scope"], str(b["scope_id"]), b["slot"])
        != (binding.scope, binding.scope_id, binding.slot)
    ]
    kept.append(
        {
            "scope": binding.scope,
            "scope_id": binding.scope_id,
            "slot": binding.slot,
            "profile_id": binding.profile_id,
        }
    )
    return {**data, "bindings": kept}


def snapshot_for(
    data: Mapping[str, Any],
    *,
    session_id: int,
    realm_id: int,
    default: LLMProfile,
    slots: tuple[Slot, ...] = SLOTS,
) -> ProfileSnapshot:
    """The frozen profiles of a turn, resolved per slot."""
    profiles = {
        str(pid): profile_from_json(value) for pid, value in (data.get("profiles") or {}).items()
    }
    return snapshot_profiles(
        session_id=str(session_id),
        realm_id=str(realm_id),
        bindings=bindings_from_json(data),
        profiles=profiles,
        default=default,
        slots=slots,
    )


class ProfileStore:
    """A realm's LLM profiles and bindings: saved, bound, and resolved for a session's turn."""

    def __init__(
        self,
        storage: Storage,
        sessions: Sessions,
        *,
        default: LLMProfile,
        cipher: SecretCipher,
    ) -> None:
        self._storage = storage
        self._sessions = sessions
        self._default = default
        self._cipher = cipher

    async def save(self, key: SessionKey, profile: LLMProfile, *, api_key: str | None) -> None:
        """Store a profile in the session's realm; ``api_key`` is encrypted first (refused
        without a secret key)."""
        ids = await self._sessions.ids(key)
        if api_key:
            profile = profile.with_api_key(api_key, self._cipher)
        await self._edit(ids.realm_id, lambda data: with_profile(data, profile))

    async def bind(
        self, key: SessionKey, *, scope: BindingScope, slot: SlotPattern, profile_id: str
    ) -> None:
        """Bind a profile to a slot (or ``*``) of this session or of its whole realm."""
        ids = await self._sessions.ids(key)
        owner = ids.session_id if scope == "session" else ids.realm_id
        binding = ProfileBinding(
            scope=scope, scope_id=str(owner), slot=slot, profile_id=profile_id
        )
        await self._edit(ids.realm_id, lambda data: with_binding(data, binding))

    async def snapshot_of(self, key: SessionKey) -> ProfileSnapshot:
        """The profiles a turn of this session would use now."""
        ids = await self._sessions.ids(key)
        async with self._storage.unit_of_work() as uow:
            session = await uow.sessions.get(ids.session_id)
            asset = await uow.assets.get(ids.realm_id, PROFILE_ASSET, PROFILE_ASSET_NAME)  # type: ignore[arg-type]
        return self.snapshot(session, asset.data if asset is not None else {})

    def snapshot(self, session: Session, data: Mapping[str, Any]) -> ProfileSnapshot:
        """The profiles of ``session`` from its realm's stored profile asset ``data``."""
        return snapshot_for(
            data, session_id=session.id, realm_id=session.realm_id, default=self._default
        )

    async def _edit(
        self, realm_id: int, change: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> None:
        async with self._storage.unit_of_work() as uow:
            asset = await uow.assets.get(realm_id, PROFILE_ASSET, PROFILE_ASSET_NAME)  # type: ignore[arg-type]
            data = change(dict(asset.data) if asset is not None else {})
            await uow.assets.put(
                realm_id=realm_id,
                kind=PROFILE_ASSET,  # type: ignore[arg-type]
                name=PROFILE_ASSET_NAME,
                data=data,
            )
