"""adapters.secrets: encryption of stored credentials (owns `cryptography`)."""

from adapters.secrets.cipher import CIPHERTEXT_PREFIX, FernetSecretCipher, build_secret_cipher

__all__ = ["CIPHERTEXT_PREFIX", "FernetSecretCipher", "build_secret_cipher"]
