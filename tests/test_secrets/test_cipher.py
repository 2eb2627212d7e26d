"""API keys at rest: round trip, versioned ciphertext, refusal without a secret, no leaks."""

from __future__ import annotations

import logging

import pytest

from adapters.secrets import CIPHERTEXT_PREFIX, FernetSecretCipher, build_secret_cipher
from engine.errors import ConfigurationError
from engine.turns.profiles import (
    LLMProfile,
    NoSecretCipher,
    SecretDecryptError,
    SecretKeyMissingError,
)

SECRET = "correct horse battery staple, but longer and random: 7f3a9c"
API_KEY = "sk-live-abcdefghijklmnopqrstuvwxyz0123456789"


def test_round_trip() -> None:
    cipher = FernetSecretCipher(SECRET)
    sealed = cipher.encrypt(API_KEY)
    assert cipher.decrypt(sealed) == API_KEY
    assert FernetSecretCipher(SECRET).decrypt(sealed) == API_KEY  # same secret, new instance


def test_ciphertext_is_tagged_and_hides_the_key() -> None:
    sealed = FernetSecretCipher(SECRET).encrypt(API_KEY)
    assert sealed.startswith(CIPHERTEXT_PREFIX)
    assert sealed != API_KEY
    assert API_KEY not in sealed
    for start in range(0, len(API_KEY) - 8, 4):
        assert API_KEY[start : start + 8] not in sealed


def test_each_encryption_differs() -> None:
    cipher = FernetSecretCipher(SECRET)
    assert cipher.encrypt(API_KEY) != cipher.encrypt(API_KEY)


def test_unicode_round_trip() -> None:
    cipher = FernetSecretCipher(SECRET)
    assert cipher.decrypt(cipher.encrypt("ключ-🔑")) == "ключ-🔑"


@pytest.mark.parametrize("secret", [None, ""])
def test_refuses_without_a_secret(secret: str | None) -> None:
    with pytest.raises(SecretKeyMissingError, match="TAVERNBOT_SECRET_KEY"):
        FernetSecretCipher(secret)
    cipher = build_secret_cipher(secret)
    assert isinstance(cipher, NoSecretCipher)
    with pytest.raises(SecretKeyMissingError, match="refusing to store"):
        cipher.encrypt(API_KEY)
    with pytest.raises(SecretKeyMissingError):
        cipher.decrypt(CIPHERTEXT_PREFIX + "whatever")
    assert issubclass(SecretKeyMissingError, ConfigurationError)


def test_profile_refuses_to_take_a_key_without_a_secret() -> None:
    profile = LLMProfile(id="p1", model="m", base_url="http://127.0.0.1:1/v1")
    with pytest.raises(SecretKeyMissingError):
        profile.with_api_key(API_KEY, build_secret_cipher(None))


def test_wrong_secret_or_damage_is_a_decrypt_error() -> None:
    sealed = FernetSecretCipher(SECRET).encrypt(API_KEY)
    with pytest.raises(SecretDecryptError, match="TAVERNBOT_SECRET_KEY"):
        FernetSecretCipher(SECRET + "x").decrypt(sealed)
    damaged = sealed[:-6] + ("A" if sealed[-6] != "A" else "B") + sealed[-5:]
    with pytest.raises(SecretDecryptError):
        FernetSecretCipher(SECRET).decrypt(damaged)
    with pytest.raises(SecretDecryptError, match="tbk1"):
        FernetSecretCipher(SECRET).decrypt(API_KEY)


def test_build_secret_cipher_with_a_secret() -> None:
    cipher = build_secret_cipher(SECRET)
    assert isinstance(cipher, FernetSecretCipher)
    assert FernetSecretCipher(SECRET).decrypt(cipher.encrypt(API_KEY)) == API_KEY


def test_nothing_leaks_to_logs_or_reprs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    cipher = FernetSecretCipher(SECRET)
    sealed = cipher.encrypt(API_KEY)
    cipher.decrypt(sealed)
    with pytest.raises(SecretDecryptError) as caught:
        FernetSecretCipher("another secret").decrypt(sealed)
    profile = LLMProfile(id="p1", model="m").with_api_key(API_KEY, cipher)
    for text in (caplog.text, repr(cipher), str(caught.value), repr(profile)):
        assert API_KEY not in text
        assert SECRET not in text
    assert sealed not in repr(profile)
