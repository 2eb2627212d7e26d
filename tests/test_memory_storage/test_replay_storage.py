"""The scripted 300-floor role-play through MemoryService and the job scheduler, on storage.

Per floor: ``retrieve`` for the user's message, tag extraction, ``after_commit`` with a memory
model that answers the scripted ops using the aliases listed in its prompt, and a scheduler tick
that runs the requested compaction. The goals of the pure replay must hold on SQLite as well,
and the stored records and relations must be identical to the in-memory fake's.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from adapters.storage.memory_repo import SqlMemoryRepository
from bot.scheduler import MemoryScheduler
from engine.memory.extraction import extract_memory_tags
from engine.memory.injection import InjectionMode, InjectionPolicy, InjectionResult
from engine.memory.lineage import visible_records
from engine.memory.ports import MemoryQuery, MemoryRepository
from engine.memory.records import Lifecycle, MemoryKind, RelationKind, SequentialIds
from engine.memory.scoping import JobScope
from engine.memory.service import MemoryService, MemorySettings
from engine.ports import ChatRequest, ChatResult
from tests.conftest import ROOT
from tests.fakes.memory_repo import InMemoryMemoryRepository
from tests.test_memory.helpers import MAIN, REALM, T0, count_tokens, view
from tests.test_memory.test_roleplay_replay import fake_agent, summarise
from tests.test_memory_storage.support import EventLog, FakeClock
from tests.test_storage.support import open_test_storage

DATA = ROOT / "tests" / "data" / "memory" / "roleplay_300.json"
FLOOR_TIME = timedelta(minutes=20)
SETTINGS = MemorySettings(
    injection=InjectionPolicy(mode=InjectionMode.IMPORTANCE, max_tokens=500, max_items=32)
)
# Stale: deprecated, updated or resolved. A record compacted into a summary may still be
# recalled when relevant (issue 18), in a section of its own.
SUPERSEDING = (RelationKind.UPDATES, RelationKind.RESOLVES)
_FACT_LINE = re.compile(r"^(F\d+) \[[^\]]*\] (.+?): ")
_LOOP_LINE = re.compile(r"^(L\d+) \[[^\]]*\] (.*)$")


@dataclass
class ListingModel:
    """The memory slot: answers the floor's scripted ops, mapping references to the aliases
    its prompt listed (it sees only the prompt, like a real model)."""

    script: dict[str, Any] = field(default_factory=dict)
    name: str = "scripted"

    async def complete(self, request: ChatRequest) -> ChatResult:
        facts, loops = [], []
        for line in request.messages[1].content.splitlines():
            if found := _FACT_LINE.match(line):
                facts.append((found[1], SimpleNamespace(key=found[2])))
            elif found := _LOOP_LINE.match(line):
                loops.append((found[1], SimpleNamespace(text=found[2])))
        context = SimpleNamespace(facts=facts, open_loops=loops)
        return ChatResult(text=fake_agent(self.script, context))  # type: ignore[arg-type]

    def stream(self, request: ChatRequest):  # pragma: no cover - never streamed
        raise NotImplementedError


@dataclass
class Played:
    repo: MemoryRepository
    injections: dict[int, InjectionResult]
    stale: list[tuple[int, str]]
    max_active_per_key: int
    events: EventLog


async def play(repo: MemoryRepository, last_floor: int) -> Played:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    clock, events, model = FakeClock(), EventLog(), ListingModel()
    service = MemoryService(
        repo,
        count=count_tokens,
        clock=clock,
        model=model,
        events=events,
        summariser=summarise,
        settings=SETTINGS,
        new_id=SequentialIds("r"),
    )
    heads: dict[str, int] = {}

    async def floors(scope: JobScope) -> tuple[int | None, tuple[int, ...]]:
        return heads.get(scope.scope_id or ""), ()

    scheduler = MemoryScheduler(repo, service, clock=clock, floors=floors)
    injections: dict[int, InjectionResult] = {}
    stale: list[tuple[int, str]] = []
    recent: list[str] = []
    max_active = 0
    for floor in data["floors"][:last_floor]:
        n = floor["floor"]
        clock.current = T0 + n * FLOOR_TIME
        here = view(n)
        injected = await service.retrieve(here, floor["user"], recent_turns=recent[-2:])
        injections[n] = injected
        used = await repo.get_records(injected.record_ids)
        relations = await repo.relations_for(injected.record_ids)
        superseded = {r.target_id for r in relations if r.kind in SUPERSEDING}
        stale += [(n, r.id) for r in used if r.lifecycle is Lifecycle.DEPRECATED]
        stale += [(n, i) for i in injected.record_ids if i in superseded]
        extracted = extract_memory_tags(floor["assistant"], role="assistant")
        model.script = floor["agent"]
        await service.after_commit(
            here,
            user_text=floor["user"],
            reply_text=extracted.visible_text,
            tag_summaries=[i.text for i in extracted.items],
            message_ref=f"msg-{n}",
        )
        heads[MAIN] = n
        await scheduler.tick()
        facts = await repo.query_records(
            MemoryQuery(realm_id=REALM, kinds=frozenset({MemoryKind.FACT}))
        )
        max_active = max([max_active, *Counter(r.key for r in facts).values()])
        recent.append(floor["user"])
    return Played(
        repo=repo, injections=injections, stale=stale, max_active_per_key=max_active, events=events
    )


async def _dump(repo: MemoryRepository):
    records = await repo.query_records(MemoryQuery(realm_id=REALM, lifecycles=None))
    return records, await repo.relations_for([r.id for r in records])


async def test_the_full_replay_on_sqlite_meets_the_goals(tmp_path: Path) -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    async with open_test_storage("sqlite", tmp_path=tmp_path) as storage:
        played = await play(SqlMemoryRepository(storage.engine), 300)
        records, relations = await _dump(played.repo)
    reference = await play(InMemoryMemoryRepository(), 300)
    assert (records, relations) == await _dump(reference.repo)

    probe, final = data["probe"], data["gold"]["final"]
    injected = played.injections[probe["floor"]]
    assert injected.tokens <= 500
    by_id = {r.id: r for r in records}
    keys = {by_id[i].key: by_id[i].text for i in injected.record_ids}
    hits = [k for k in probe["relevant_keys"] if keys.get(k) == final[k]]
    assert len(hits) / len(probe["relevant_keys"]) >= 0.95
    assert played.stale == [] and played.max_active_per_key == 1
    live = visible_records(records, relations, view(300))
    assert {r.key: r.text for r in live if r.kind is MemoryKind.FACT} == final
    compacted = {r.id for r in records if r.lifecycle is Lifecycle.COMPACTED}
    links = Counter(r.target_id for r in relations if r.kind is RelationKind.COMPACTS)
    assert compacted and set(links) == compacted and set(links.values()) == {1}
    invalid = played.events.named("memory.agent_output_invalid")
    assert len(invalid) == len(data["gold"]["broken_floors"])


@pytest.mark.postgres
async def test_a_replay_on_postgres_stores_what_the_fake_stores(
    tmp_path: Path, pg_url: str
) -> None:
    async with open_test_storage("postgres", tmp_path=tmp_path, pg_url=pg_url) as storage:
        played = await play(SqlMemoryRepository(storage.engine), 60)
        dumped = await _dump(played.repo)
    reference = await play(InMemoryMemoryRepository(), 60)
    assert dumped == await _dump(reference.repo)
    assert played.injections[60].text == reference.injections[60].text
