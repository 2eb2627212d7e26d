"""Chat models shared between turns, one per distinct profile configuration.

A turn resolves a profile per slot (``engine.turns.profiles``); building an ``AsyncOpenAI``
client for every turn would open a new connection pool each time. :class:`ChatModelPool` keeps
one model per (provider, base URL, key, model, timeout, retries) and closes them all on
shutdown. The key is part of the identity only as a SHA-256 digest.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping

from adapters.llm.factory import ClosableChatModel, build_chat_model
from engine.ports import ChatModel
from engine.turns.profiles import LLMProfile, SecretCipher

MAX_POOLED_MODELS = 64
"""At most this many models are kept; the least recently used one is retired beyond it."""

_PoolKey = tuple[str, str, str, str, float, int]


def _key_digest(api_key: str | None) -> str:
    return hashlib.sha256(api_key.encode("utf-8")).hexdigest() if api_key else ""


class ChatModelPool:
    """Builds chat models on demand and reuses them; ``aclose()`` releases every one."""

    def __init__(self, *, max_models: int = MAX_POOLED_MODELS) -> None:
        if max_models < 1:
            raise ValueError(f"max_models must be >= 1, got {max_models}")
        self.max_models = max_models
        self._models: OrderedDict[_PoolKey, ClosableChatModel] = OrderedDict()
        # Retired models may still serve a running turn, so they are closed only at shutdown.
        self._retired: list[ClosableChatModel] = []

    def __len__(self) -> int:
        return len(self._models)

    def get(
        self,
        provider: str,
        base_url: str | None,
        api_key: str | None,
        model: str,
        timeout_s: float = 120.0,
        max_retries: int = 3,
    ) -> ChatModel:
        """The pooled model for these settings (built by ``build_chat_model`` the first time)."""
        offline = provider == "offline" or not base_url
        key: _PoolKey = (
            ("offline", "", "", "", 0.0, 0)
            if offline
            else (provider, base_url or "", _key_digest(api_key), model, timeout_s, max_retries)
        )
        found = self._models.get(key)
        if found is not None:
            self._models.move_to_end(key)
            return found
        built = build_chat_model(provider, base_url, api_key, model, timeout_s, max_retries)
        self._models[key] = built
        while len(self._models) > self.max_models:
            _, oldest = self._models.popitem(last=False)
            self._retired.append(oldest)
        return built

    def for_profile(
        self, profile: LLMProfile, cipher: SecretCipher, environ: Mapping[str, str]
    ) -> ChatModel:
        """The pooled model for ``profile``, its key decrypted (or read) just for the lookup."""
        api_key = profile.reveal_api_key(cipher, environ)
        return self.get(
            profile.provider,
            profile.base_url,
            api_key,
            profile.model,
            profile.timeout_s,
            profile.max_retries,
        )

    async def aclose(self) -> None:
        """Close every model built (pooled and retired)."""
        models = [*self._models.values(), *self._retired]
        self._models.clear()
        self._retired.clear()
        for model in models:
            await model.aclose()
