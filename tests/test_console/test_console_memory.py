"""Console ``/memory [QUERY]`` and ``/forget ID`` on the real engine (SQLite file, offline
model, the SQL memory service) and, in text mode, on the in-memory double."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from adapters.console.frontend import ConsoleFrontend
from adapters.llm import OfflineChatModel
from adapters.storage import open_storage
from bot.scheduler import build_memory_service
from engine.memory.plan import MutationPlan
from engine.memory.records import MemoryKind, MemoryRecord, MemoryScope, MemorySource, Provenance
from engine.turns.api import MAIN_BRANCH, MemoryView, SessionKey
from engine.turns.profiles import environment_profile
from engine.turns.service import TavernService
from tests.fakes.roleplay import FullFakeRoleplayService

pytestmark = pytest.mark.timeout(60)
KEY = SessionKey(platform="console", realm="local", key="remembering")
OTHER = SessionKey(platform="console", realm="elsewhere", key="other")


def _fact(n: int, realm: int, session: int, branch: int, text: str) -> MemoryRecord:
    return MemoryRecord(
        id=f"mem-{n}",
        kind=MemoryKind.FACT,
        scope=MemoryScope.CHAT,
        scope_id=str(session),
        realm_id=str(realm),
        session_id=str(session),
        origin_branch=str(branch),
        text=text,
        provenance=Provenance(source=MemorySource.MANUAL, floor_no=1),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        created_floor=1,
    )


async def test_memory_and_forget_on_the_engine(tmp_path: Path) -> None:
    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path}/m.db")
    model = OfflineChatModel(announce=False)
    memory = build_memory_service(storage, model=None, model_name="offline")
    service = TavernService(
        storage,
        model_for=lambda p: model,
        default_profile=environment_profile(provider="offline", base_url=None, model="x"),
        memory=memory,
    )
    await service.start()
    records = []
    for n, key, text in ((1, KEY, "the well is cursed"), (2, OTHER, "the gate is locked")):
        await service.open_session(key)
        ids = await service.parts.sessions.ids(key)
        branch = await service.parts.sessions.branch(ids.session_id, MAIN_BRANCH)
        records.append(_fact(n, ids.realm_id, ids.session_id, branch.id, text))
    out = io.StringIO()
    console = ConsoleFrontend(service=service, key=KEY, user="Ann", out=out, jsonl=True)
    assert await console.handle_line("hello")
    other = ConsoleFrontend(service=service, key=OTHER, user="Bob", out=io.StringIO())
    assert await other.handle_line("hi")
    await memory.repo.apply_plan(MutationPlan(new_records=tuple(records)))
    for line in (
        "/memory",
        "/memory cursed well",
        "/memory dragons",
        "/forget mem-2",
        "/forget",
        "/forget mem-1",
        "/memory",
    ):
        assert await console.handle_line(line)
    await service.aclose()
    await storage.close()
    rows = [json.loads(x) for x in out.getvalue().splitlines()]
    # Memory is on by default (issue 13), so the turns' own summaries are remembered too;
    # of the records planted here, only this session's may show.
    planted = {"mem-1", "mem-2"}
    lists = [
        [i["id"] for i in r["items"] if i["id"] in planted]
        for r in rows
        if r["type"] == "memories"
    ]
    assert lists == [["mem-1"], ["mem-1"], [], []]
    first = next(r for r in rows if r["type"] == "memories")
    # The turn's own summary may rank before or after the planted record: find it by id.
    (planted_item,) = [i for i in first["items"] if i["id"] == "mem-1"]
    assert planted_item["text"] == "the well is cursed"
    assert planted_item["kind"] == "fact" and planted_item["scope"] == "chat"
    errors = [r["message"] for r in rows if r["type"] == "error"]
    assert "mem-2" in errors[0]  # another realm's memory is not found from here
    assert errors[1].startswith("usage: /forget")
    assert {"type": "info", "message": "forgot memory mem-1"} in rows


async def test_memory_in_text_mode_on_the_double() -> None:
    service = FullFakeRoleplayService()
    await service.open_session(KEY)
    service.remember(
        KEY.realm,
        MemoryView(id="m1", kind="fact", text="Ann owes a debt", scope="chat", importance=0.7),
    )
    service.remember(
        OTHER.realm,
        MemoryView(id="m9", kind="fact", text="not for Ann", scope="chat", importance=0.2),
    )
    out = io.StringIO()
    console = ConsoleFrontend(service=service, key=KEY, user="Ann", out=out)
    for line in ("/memory", "/forget m1", "/memory"):
        assert await console.handle_line(line)
    assert out.getvalue().splitlines() == [
        "  m1 [fact/chat] Ann owes a debt",
        "* forgot memory m1",
        "* nothing remembered",
    ]
