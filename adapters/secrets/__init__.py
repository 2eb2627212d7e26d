"""adapters.secrets: encryption of stored credentials (owns `cryptography`)."""
