"""Two engine services on one PostgreSQL schema, as two processes would be: each with its
own engine (connection pool) and its own per-process caches, sharing only the database."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from adapters.llm import OfflineChatModel
from adapters.storage import SqlStorage, create_engine, upgrade_engine
from engine.ports import Event
from engine.turns.api import SessionKey, Speaker, UserLine
from engine.turns.profiles import environment_profile
from engine.turns.service import TavernService
from tests.test_storage.support import pg_schema

KEY = SessionKey(platform="discord", realm="guild-1", key="channel-1")
ANN = Speaker(id="u1", name="Ann")


def line(text: str, speaker: Speaker = ANN) -> UserLine:
    """One user message."""
    return UserLine(speaker=speaker, text=text)


def card(name: str, description: str) -> bytes:
    """A character card file (JSON, V2) with ``description``."""
    data = {"name": name, "description": description, "first_mes": ""}
    return json.dumps({"spec": "chara_card_v2", "spec_version": "2.0", "data": data}).encode()


class _Quiet:
    def emit(self, event: Event) -> None:
        """Events are not looked at here."""


def _service(storage: SqlStorage) -> TavernService:
    model = OfflineChatModel(announce=False)
    return TavernService(
        storage,
        model_for=lambda profile: model,
        default_profile=environment_profile(provider="offline", base_url=None, model="offline"),
        events=_Quiet(),
    )


@asynccontextmanager
async def two_services(pg_url: str) -> AsyncIterator[tuple[TavernService, TavernService]]:
    """Two started services on one fresh, migrated schema (each with its own storage)."""
    async with pg_schema(pg_url) as schema:
        stores = [SqlStorage(create_engine(pg_url, schema=schema)) for _ in range(2)]
        try:
            await upgrade_engine(stores[0].engine)
            services = (_service(stores[0]), _service(stores[1]))
            for service in services:
                await service.start()
            try:
                yield services
            finally:
                for service in services:
                    await service.aclose()
                    await service.release_lease()
        finally:
            for store in stores:
                await store.close()


def prompt_text(dry_run: Any) -> str:
    """Every message of a dry run's prompt, joined."""
    return "\n".join(str(m.get("content", "")) for m in dry_run["messages"])
