"""``[llm] embeddings_model``: the embedder it builds and what ``config check`` says."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.cli import main
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


def test_config_check_prints_the_embedding_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("LLM_BASE_URL", "LLM_MODEL", "LLM_API_KEY", "DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tavernbot.toml").write_text(
        '[llm]\nbase_url = "http://127.0.0.1:8000/v1"\nembeddings_model = "nomic-embed-text"\n'
    )
    assert main(["config", "check"]) == 0
    assert "embeddings: nomic-embed-text at http://127.0.0.1:8000/v1" in capsys.readouterr().out
    (tmp_path / "tavernbot.toml").write_text('[llm]\nbase_url = "http://127.0.0.1:8000/v1"\n')
    assert main(["config", "check"]) == 0
    assert "embeddings: none (memory ranks with BM25 alone)" in capsys.readouterr().out
