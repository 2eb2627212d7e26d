"""The embedder ``[llm] embeddings_model`` names, for the memory service (None: BM25 alone)."""

from __future__ import annotations

from adapters.llm.embeddings import OpenAIEmbedder
from adapters.llm.retry import RetryPolicy
from bot.config import Settings


def build_embedder(settings: Settings) -> OpenAIEmbedder | None:
    """An embedder on ``embeddings_base_url`` (default ``base_url``) with
    ``embeddings_api_key`` (default ``api_key``); None without a model or an endpoint."""
    llm = settings.llm
    url = llm.embeddings_base_url or llm.base_url
    if not llm.embeddings_model or not url:
        return None
    key = llm.embeddings_api_key or llm.api_key
    return OpenAIEmbedder(
        base_url=url,
        model=llm.embeddings_model,
        api_key=key.get_secret_value() if key is not None else None,
        timeout_s=llm.timeout_s,
        retry=RetryPolicy(max_retries=llm.max_retries),
    )
