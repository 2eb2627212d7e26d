"""Through the turn loop (issue 18): the records a turn writes carry the in-story date its
chat variable held when the turn was played, and the next turn's memory block shows it."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from adapters.llm import OfflineChatModel
from adapters.storage import open_storage
from adapters.storage.tables import RECORD
from bot.scheduler import build_memory_service
from engine.turns.api import SessionKey, Speaker, UserLine
from engine.turns.profiles import environment_profile
from engine.turns.service import TavernService

ANN = Speaker(id="u1", name="Ann")
KEY = SessionKey(platform="console", realm="local", key="dated")


async def test_a_turn_played_on_a_dated_chat_writes_dated_memories(tmp_path: Path) -> None:
    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path}/t.db")
    model = OfflineChatModel(announce=False)
    memory = build_memory_service(storage, model=None, model_name="offline")
    service = TavernService(
        storage,
        model_for=lambda p: model,
        default_profile=environment_profile(provider="offline", base_url=None, model="x"),
        memory=memory,
    )
    await service.start()
    try:
        await service.open_session(KEY)
        await service.respond(KEY, "main", [UserLine(speaker=ANN, text="Before any date.")])
        await service.drain()
        await service.set_variable(KEY, "main", "date", "8 May 2023")
        await service.respond(KEY, "main", [UserLine(speaker=ANN, text="We met yesterday.")])
        await service.drain()
        async with storage.engine.connect() as conn:
            rows = (await conn.execute(select(RECORD.c.created_floor, RECORD.c.story_date))).all()
        by_floor = dict(rows)
        assert by_floor.get(1, "missing") is None and by_floor.get(2) == "8 May 2023", by_floor
        # The next turn's prompt shows the date in its memory block.
        prompt = str(await service.dry_run(KEY, "main", "Who did we meet yesterday?"))
        assert "(8 May 2023)" in prompt, prompt
    finally:
        await service.aclose()
        await storage.close()


def test_the_story_date_variable_is_configured_under_memory() -> None:
    from bot.config import load_settings

    assert load_settings(None, environ={}).memory.story_date_variable == "date"
    env = {"TAVERNBOT_MEMORY_STORY_DATE_VARIABLE": "story_date"}
    assert load_settings(None, environ=env).memory.story_date_variable == "story_date"
