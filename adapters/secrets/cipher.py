"""Encryption of API keys at rest: Fernet with a key derived from ``TAVERNBOT_SECRET_KEY``.

The Fernet key is HKDF-SHA256 of the secret (fixed salt and context), so the same secret always
opens what it sealed. Ciphertexts carry a version prefix (``tbk1:``) so that a later scheme can
be told apart and old keys re-encrypted. HKDF adds no stretching: the secret must be a long
random string, as the configuration says, not a password.

Nothing here logs; neither the secret nor a key ever appears in a message.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from engine.turns.profiles import (
    SECRET_KEY_VARIABLE,
    NoSecretCipher,
    SecretCipher,
    SecretDecryptError,
    SecretKeyMissingError,
)

CIPHERTEXT_PREFIX = "tbk1:"
"""Version tag of every ciphertext this module makes."""
_HKDF_SALT = b"tavernbot/api-keys"
_HKDF_INFO = b"tavernbot api-key encryption v1"


def _fernet_key(secret: str) -> bytes:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=_HKDF_SALT, info=_HKDF_INFO).derive(
        secret.encode("utf-8")
    )
    return base64.urlsafe_b64encode(derived)


class FernetSecretCipher:
    """:class:`engine.turns.profiles.SecretCipher` with Fernet (AES-128-CBC + HMAC-SHA256)."""

    def __init__(self, secret: str | None) -> None:
        if not secret:
            raise SecretKeyMissingError(
                f"refusing to store an API key: {SECRET_KEY_VARIABLE} is not set "
                "(set it to a long random string)"
            )
        self._fernet = Fernet(_fernet_key(secret))

    def __repr__(self) -> str:
        return "FernetSecretCipher(<secret hidden>)"

    def encrypt(self, plaintext: str) -> str:
        """``tbk1:`` followed by a Fernet token of ``plaintext``."""
        token = self._fernet.encrypt(plaintext.encode("utf-8"))
        return CIPHERTEXT_PREFIX + token.decode("ascii")

    def decrypt(self, ciphertext: str) -> str:
        """The plaintext; :class:`SecretDecryptError` for a foreign or damaged ciphertext."""
        if not ciphertext.startswith(CIPHERTEXT_PREFIX):
            raise SecretDecryptError(
                f"stored API key is not a {CIPHERTEXT_PREFIX!r} ciphertext "
                "(was it stored in the clear or by another version?)"
            )
        token = ciphertext[len(CIPHERTEXT_PREFIX) :].encode("ascii", errors="replace")
        try:
            return self._fernet.decrypt(token).decode("utf-8")
        except (InvalidToken, UnicodeDecodeError) as exc:
            raise SecretDecryptError(
                f"stored API key could not be decrypted: {SECRET_KEY_VARIABLE} differs from "
                "the one it was stored with, or the value is damaged"
            ) from exc


def build_secret_cipher(secret: str | None) -> SecretCipher:
    """The cipher for ``secret``; with none, one that refuses to store or read keys."""
    if not secret:
        return NoSecretCipher()
    return FernetSecretCipher(secret)
