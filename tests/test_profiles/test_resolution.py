"""Profile resolution order, per-slot independence, snapshots and profile values."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.errors import ConfigurationError
from engine.turns.profiles import (
    ENVIRONMENT_PROFILE_ID,
    MAX_PROFILE_ID_LENGTH,
    MAX_RETRIES_LIMIT,
    SLOTS,
    LLMProfile,
    ProfileBinding,
    Slot,
    SlotPattern,
    UnknownProfileError,
    environment_profile,
    resolve_profile,
    snapshot_profiles,
)

SESSION, REALM = "s1", "r1"
DEFAULT = environment_profile(provider="offline", base_url=None, model="env-model")
PROFILES = {
    pid: LLMProfile(id=pid, model=f"{pid}-model", base_url="http://127.0.0.1:1/v1")
    for pid in ("sess_slot", "realm_slot", "sess_any", "realm_any", "elsewhere")
}


def _bind(scope: str, slot: SlotPattern, pid: str, scope_id: str | None = None) -> ProfileBinding:
    owner = scope_id or (SESSION if scope == "session" else REALM)
    return ProfileBinding(scope=scope, scope_id=owner, slot=slot, profile_id=pid)  # type: ignore[arg-type]


ALL_LEVELS = [
    _bind("session", "narrator", "sess_slot"),
    _bind("realm", "narrator", "realm_slot"),
    _bind("session", "*", "sess_any"),
    _bind("realm", "*", "realm_any"),
]


def _resolve(bindings: Sequence[ProfileBinding], slot: Slot = "narrator") -> tuple[str, str]:
    resolved = resolve_profile(
        slot,
        session_id=SESSION,
        realm_id=REALM,
        bindings=bindings,
        profiles=PROFILES,
        default=DEFAULT,
    )
    return resolved.profile.id, resolved.source


@pytest.mark.parametrize(
    ("removed", "expected"),
    [
        (0, ("sess_slot", "session+slot")),
        (1, ("realm_slot", "realm+slot")),
        (2, ("sess_any", "session+*")),
        (3, ("realm_any", "realm+*")),
        (4, (ENVIRONMENT_PROFILE_ID, "environment")),
    ],
)
def test_each_level_wins_over_the_ones_below(removed: int, expected: tuple[str, str]) -> None:
    assert _resolve(ALL_LEVELS[removed:]) == expected
    # The order of the bindings given does not matter.
    assert _resolve(list(reversed(ALL_LEVELS[removed:]))) == expected


def test_realm_slot_beats_session_wildcard() -> None:
    bindings = [_bind("session", "*", "sess_any"), _bind("realm", "narrator", "realm_slot")]
    assert _resolve(bindings) == ("realm_slot", "realm+slot")


def test_slots_resolve_independently() -> None:
    bindings = [
        _bind("session", "director", "sess_slot"),
        _bind("realm", "memory", "realm_slot"),
        _bind("realm", "*", "realm_any"),
    ]
    assert _resolve(bindings, "director") == ("sess_slot", "session+slot")
    assert _resolve(bindings, "memory") == ("realm_slot", "realm+slot")
    assert _resolve(bindings, "narrator") == ("realm_any", "realm+*")
    assert _resolve(bindings, "verifier") == ("realm_any", "realm+*")


def test_other_sessions_and_realms_are_ignored() -> None:
    bindings = [
        _bind("session", "narrator", "elsewhere", scope_id="s2"),
        _bind("realm", "*", "elsewhere", scope_id="r2"),
    ]
    assert _resolve(bindings) == (ENVIRONMENT_PROFILE_ID, "environment")


def test_binding_to_a_missing_profile_is_an_error() -> None:
    with pytest.raises(UnknownProfileError, match="'ghost'"):
        _resolve([_bind("session", "narrator", "ghost")])


def test_conflicting_bindings_are_an_error() -> None:
    bindings = [_bind("realm", "*", "realm_any"), _bind("realm", "*", "sess_any")]
    with pytest.raises(ConfigurationError, match="twice"):
        _resolve(bindings)


def test_bad_binding_values_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown slot"):
        _bind("session", "painter", "p")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="scope"):
        _bind("guild", "*", "p", scope_id="g")


def test_snapshot_is_frozen_for_the_turn() -> None:
    profiles = dict(PROFILES)
    bindings = list(ALL_LEVELS)
    snapshot = snapshot_profiles(
        session_id=SESSION, realm_id=REALM, bindings=bindings, profiles=profiles, default=DEFAULT
    )
    assert set(snapshot.by_slot) == set(SLOTS)
    assert snapshot.profile("narrator").id == "sess_slot"
    assert snapshot.profile("director").id == "sess_any"
    # Edits after the snapshot do not reach it.
    profiles["sess_slot"] = LLMProfile(id="sess_slot", model="changed")
    bindings.clear()
    assert snapshot.profile("narrator").model == "sess_slot-model"
    with pytest.raises(TypeError):
        snapshot.by_slot["narrator"] = snapshot.by_slot["director"]  # type: ignore[index]


def test_snapshot_of_some_slots_only() -> None:
    snapshot = snapshot_profiles(
        session_id=SESSION,
        realm_id=REALM,
        bindings=(),
        profiles={},
        default=DEFAULT,
        slots=("narrator",),
    )
    assert snapshot.resolved("narrator").source == "environment"
    with pytest.raises(ConfigurationError, match="snapshot"):
        snapshot.profile("memory")


def test_profile_sampling_is_a_read_only_copy() -> None:
    sampling = {"temperature": 0.9}
    profile = LLMProfile(id="p", model="m", sampling=sampling)
    sampling["temperature"] = 0.1
    assert profile.sampling["temperature"] == 0.9
    with pytest.raises(TypeError):
        profile.sampling["temperature"] = 0.5  # type: ignore[index]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"id": ""}, "id"),
        ({"id": "x" * (MAX_PROFILE_ID_LENGTH + 1)}, "id"),
        ({"provider": "anthropic"}, "provider"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"max_retries": MAX_RETRIES_LIMIT + 1}, "max_retries"),
        ({"max_retries": -1}, "max_retries"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"api_key_encrypted": "tbk1:x", "api_key_ref": "ENV"}, "not both"),
    ],
)
def test_profile_values_are_checked(kwargs: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"id": "p", "model": "m", **kwargs}
    with pytest.raises(ConfigurationError, match=message):
        LLMProfile(**fields)  # type: ignore[arg-type]


def test_profile_limits_accept_their_bounds() -> None:
    LLMProfile(id="x" * MAX_PROFILE_ID_LENGTH, model="m", max_retries=MAX_RETRIES_LIMIT)
    LLMProfile(id="p", model="m", max_retries=0)
