"""Stage order per prompt mode and enabled slots; API keys through a profile."""

from __future__ import annotations

import pytest

from engine.errors import ConfigurationError
from engine.turns.profiles import (
    COMPAT_STRICT,
    DEFAULT_ENABLED_SLOTS,
    ENVIRONMENT_KEY_VARIABLE,
    SLOTS,
    STAGE_ORDER,
    LLMProfile,
    SlotDisabledError,
    environment_profile,
    merge_sampling,
    stages_for_turn,
)


class ReversingCipher:
    """A stand-in cipher (the real one is tested in tests/test_secrets)."""

    def encrypt(self, plaintext: str) -> str:
        return "rev:" + plaintext[::-1]

    def decrypt(self, ciphertext: str) -> str:
        return ciphertext.removeprefix("rev:")[::-1]


def test_stage_order_is_the_seeds() -> None:
    assert STAGE_ORDER == ("director", "memory_retrieval", "narrator", "verifier", "memory_agent")


def test_all_slots_enabled_runs_every_stage_in_order() -> None:
    assert stages_for_turn("native", SLOTS) == STAGE_ORDER
    assert stages_for_turn("compat_plus", SLOTS) == STAGE_ORDER


def test_compat_strict_runs_the_narrator_only() -> None:
    assert stages_for_turn(COMPAT_STRICT, SLOTS) == ("narrator",)
    assert stages_for_turn(COMPAT_STRICT, DEFAULT_ENABLED_SLOTS) == ("narrator",)


def test_disabled_optional_slots_are_skipped() -> None:
    assert stages_for_turn("native", DEFAULT_ENABLED_SLOTS) == (
        "memory_retrieval",
        "narrator",
        "memory_agent",
    )
    assert stages_for_turn("native", {"narrator", "verifier"}) == ("narrator", "verifier")


def test_disabled_narrator_is_an_error() -> None:
    with pytest.raises(SlotDisabledError, match="narrator"):
        stages_for_turn("native", {"director", "memory"})
    with pytest.raises(SlotDisabledError):
        stages_for_turn(COMPAT_STRICT, ())


def test_unknown_slot_is_an_error() -> None:
    with pytest.raises(ConfigurationError, match="painter"):
        stages_for_turn("native", {"narrator", "painter"})  # type: ignore[arg-type]


def test_sampling_merges_shallowly_later_wins() -> None:
    preset = {"temperature": 1.0, "top_p": 0.9, "logit_bias": {"1": 2}}
    profile = {"temperature": 0.7}
    instance = {"logit_bias": {"3": 4}}
    assert merge_sampling(preset, profile, instance) == {
        "temperature": 0.7,
        "top_p": 0.9,
        "logit_bias": {"3": 4},
    }


def test_key_is_stored_encrypted_and_revealed_for_the_call() -> None:
    cipher = ReversingCipher()
    profile = LLMProfile(id="p", model="m").with_api_key("sk-abc", cipher)
    assert profile.api_key_encrypted == "rev:cba-ks"
    assert profile.has_api_key
    assert profile.reveal_api_key(cipher, {}) == "sk-abc"
    cleared = profile.with_api_key(None, cipher)
    assert not cleared.has_api_key
    assert cleared.reveal_api_key(cipher, {}) is None


def test_key_by_reference_reads_the_environment() -> None:
    env = environment_profile(provider="openai", base_url="http://127.0.0.1:1/v1", model="m")
    assert env.api_key_ref == ENVIRONMENT_KEY_VARIABLE
    assert env.reveal_api_key(ReversingCipher(), {ENVIRONMENT_KEY_VARIABLE: "sk-env"}) == "sk-env"
    assert env.reveal_api_key(ReversingCipher(), {}) is None
    assert env.reveal_api_key(ReversingCipher(), {ENVIRONMENT_KEY_VARIABLE: ""}) is None
