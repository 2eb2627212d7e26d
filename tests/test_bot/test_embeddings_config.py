"""``[llm] embeddings_model``: the embedder it builds and what ``config check`` says."""

from __future__ import annotations

from bot.config import Settings, describe_embeddings
from bot.embeddings import build_embedder


def test_config_names_the_embedding_model_or_bm25_alone() -> None:
    assert build_embedder(Settings()) is None
    assert describe_embeddings(Settings()) == "none (memory ranks with BM25 alone)"
    same = Settings.model_validate(
        {"llm": {"base_url": "http://127.0.0.1:9/v1", "embeddings_model": "nomic-embed-text"}}
    )
    built = build_embedder(same)
    assert built is not None and built.model == "nomic-embed-text"
    assert built.base_url == "http://127.0.0.1:9/v1"
    assert describe_embeddings(same) == "nomic-embed-text at http://127.0.0.1:9/v1"
    other = Settings.model_validate(
        {
            "llm": {
                "base_url": "http://127.0.0.1:9/v1",
                "embeddings_model": "text-embedding-3-small",
                "embeddings_base_url": "http://127.0.0.1:10/v1",
            }
        }
    )
    built_other = build_embedder(other)
    assert built_other is not None and built_other.base_url == "http://127.0.0.1:10/v1"
    no_url = Settings.model_validate({"llm": {"embeddings_model": "m"}})
    assert build_embedder(no_url) is None and "BM25 alone" in describe_embeddings(no_url)
