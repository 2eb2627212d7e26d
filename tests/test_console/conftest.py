"""Fixtures of the console tests: the real engine on a fresh SQLite file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.llm import OfflineChatModel
from adapters.storage import open_storage
from engine.turns.profiles import environment_profile
from engine.turns.service import TavernService


@pytest.fixture
async def offline_engine(tmp_path: Path) -> AsyncIterator[TavernService]:
    """A started TavernService with the offline model on its own database."""
    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path}/console.db")
    model = OfflineChatModel(announce=False)
    service = TavernService(
        storage,
        model_for=lambda p: model,
        default_profile=environment_profile(provider="offline", base_url=None, model="x"),
    )
    await service.start()
    try:
        yield service
    finally:
        await service.aclose()
        await storage.close()
