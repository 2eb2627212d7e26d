"""Where LLM profiles and their bindings are kept: one JSON asset per realm.

The asset (kind ``profile``, name ``llm``) holds ``{"profiles": {id: {...}}, "bindings":
[...]}``. Session bindings name the session by its database id, realm bindings the realm by
its id, so :func:`snapshot_for` resolves a turn with :mod:`engine.turns.profiles`. API keys are
stored only as ciphertext (``api_key_encrypted``) or as the name of an environment variable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import ConfigurationError
from engine.turns.profiles import (
    SLOTS,
    LLMProfile,
    ProfileBinding,
    ProfileSnapshot,
    Slot,
    snapshot_profiles,
)


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
