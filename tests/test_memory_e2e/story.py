"""The scripted 300-floor role-play played through the turn workflow and the fake model server.

:class:`StoryModel` is the fake server's responder. It tells the three kinds of request apart
by their system prompt, as the server sees only the wire format:

* the memory agent's (``AGENT_SYSTEM_PROMPT``): it answers the floor's scripted ops, with each
  reference to an existing fact or loop mapped to the alias the request's listing gave it
  (``tests.test_memory.test_roleplay_replay.fake_agent``), so it can only use ids it was shown;
* compaction's (``COMPACTION_SYSTEM_PROMPT``): the deterministic topic summary of the pure
  replay, built from the numbered summaries in the request;
* anything else is the narrator: the floor's scripted reply, ``<summary>`` tags included.

:func:`open_table` builds what the application builds (``bot.app``): the SQL storage, the
openai provider pointed at the fake server through the model pool, the memory service on the
SQL memory repository with the default profile's model, the ``TavernService`` with that
memory, and the memory scheduler, which the test ticks by hand under a controllable clock.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from adapters.llm import ChatModelPool
from adapters.storage import SqlStorage
from bot.scheduler import MemoryScheduler, build_memory_service, timeline_floors
from engine.memory.agent_context import AGENT_SYSTEM_PROMPT
from engine.memory.compaction import COMPACTION_SYSTEM_PROMPT, CompactionRequest
from engine.memory.injection import PREAMBLE, TokenCounter
from engine.memory.records import SequentialIds
from engine.memory.service import MemoryService, MemorySettings
from engine.prompt.tokens import counter_for_model
from engine.turns.api import MAIN_BRANCH, ReplyView, SessionKey, Speaker, UserLine
from engine.turns.profiles import LLMProfile, NoSecretCipher
from engine.turns.service import TavernService
from tests.conftest import ROOT
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeResponse
from tests.test_memory.helpers import T0
from tests.test_memory.test_roleplay_replay import fake_agent, summarise
from tests.test_memory_storage.support import EventLog, FakeClock
from tests.test_storage.support import open_test_storage

DATA = ROOT / "tests" / "data" / "memory" / "roleplay_300.json"
MODEL = "gpt-4o-mini"
"""The model name the profile sends. The fake server stands in for an OpenAI endpoint, so the
prompt's counter is exact (o200k); for a model name it does not know, the project estimates with
a 15 % margin, which leaves the 500-token budget about 435 real tokens."""
FLOOR_TIME = timedelta(minutes=20)
"""Story time between two floors (the clock moves by this before each turn)."""
REPLY_CHUNK_CHARS = 64
"""Characters per streamed chunk of the narrator's reply."""
KEY = SessionKey(platform="console", realm="local", key="replay")
ANN = Speaker(id="u1", name="Ann")

# The first line of each fixed system prompt tells the requests apart.
_AGENT_MARK = AGENT_SYSTEM_PROMPT.split("\n", 1)[0][:60]
_COMPACT_MARK = COMPACTION_SYSTEM_PROMPT[:60]
_FACT_LINE = re.compile(r"^(F\d+) \[[^\]]*\] (.+?): ")
_LOOP_LINE = re.compile(r"^(L\d+) \[[^\]]*\] (.*)$")
_SPAN = re.compile(r"^Summaries of floors (\d+)-(\d+)")
_NUMBERED = re.compile(r"^\d+\. (.*)$")


def load_story() -> dict[str, Any]:
    """The scripted role-play (floors, gold facts, the floor-300 probe)."""
    data: dict[str, Any] = json.loads(DATA.read_text(encoding="utf-8"))
    return data


@dataclass
class Exchange:
    """One chat request the fake server answered, sorted by kind."""

    kind: str  # "narrator" | "agent" | "compact"
    floor: int
    messages: list[Mapping[str, Any]]
    answer: str


def kind_of(messages: Sequence[Mapping[str, Any]]) -> str:
    """Which slot sent a request, from its system prompt."""
    first = messages[0] if messages else {}
    content = str(first.get("content") or "") if first.get("role") == "system" else ""
    if content.startswith(_AGENT_MARK):
        return "agent"
    if content.startswith(_COMPACT_MARK):
        return "compact"
    return "narrator"


def _user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    return next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")


def agent_answer(script: Mapping[str, Any], listing: str) -> str:
    """The scripted ops with references mapped to the aliases ``listing`` shows."""
    facts, loops = [], []
    for line in listing.splitlines():
        if found := _FACT_LINE.match(line):
            facts.append((found[1], SimpleNamespace(key=found[2])))
        elif found := _LOOP_LINE.match(line):
            loops.append((found[1], SimpleNamespace(text=found[2])))
    context = SimpleNamespace(facts=facts, open_loops=loops)
    return fake_agent(dict(script), context)  # type: ignore[arg-type]


async def compaction_answer(listing: str) -> str:
    """The deterministic summary of the summaries a compaction request numbers."""
    lines = listing.splitlines()
    span = _SPAN.match(lines[0]) if lines else None
    if span is None:
        raise AssertionError(f"not a compaction request: {listing[:80]!r}")
    texts = tuple(m[1] for line in lines[1:] if (m := _NUMBERED.match(line)))
    request = CompactionRequest(
        tier=2, texts=texts, coverage_start=int(span[1]), coverage_end=int(span[2])
    )
    return await summarise(request)


@dataclass
class StoryModel:
    """The fake server's responder for the scripted role-play (see the module docstring).

    ``floor`` is the script of the floor being played; ``agent_raw`` (when set) replaces the
    memory agent's scripted answer, for the broken-output tests.
    """

    floor: Mapping[str, Any] | None = None
    agent_raw: str | None = None
    exchanges: list[Exchange] = field(default_factory=list)
    compactions: list[str] = field(default_factory=list)

    def __call__(self, body: Mapping[str, Any]) -> FakeResponse:
        messages = list(body.get("messages", []))
        kind = kind_of(messages)
        n = int(self.floor["floor"]) if self.floor is not None else 0
        if kind == "compact":
            # The compaction summariser awaits nothing: run its coroutine to the end here.
            answer = _run_sync(compaction_answer(_user_text(messages)))
        elif self.floor is None:
            raise AssertionError(f"a {kind} request outside any floor")
        elif kind == "agent":
            listing = _user_text(messages)
            if self.agent_raw is not None:
                answer = self.agent_raw
            else:
                answer = agent_answer(self.floor["agent"], listing)
        else:
            answer = str(self.floor["assistant"])
        self.exchanges.append(Exchange(kind=kind, floor=n, messages=messages, answer=answer))
        return FakeReply(text=answer, chunk_chars=REPLY_CHUNK_CHARS)

    def last(self, kind: str, floor: int | None = None) -> Exchange:
        """The latest request of ``kind`` (on ``floor`` if given)."""
        for exchange in reversed(self.exchanges):
            if exchange.kind == kind and (floor is None or exchange.floor == floor):
                return exchange
        raise AssertionError(f"no {kind} request recorded for floor {floor}")


def _run_sync(coro: Any) -> str:
    try:
        coro.send(None)
    except StopIteration as done:
        return str(done.value)
    coro.close()
    raise AssertionError("the compaction answer awaited something")


def memory_block(messages: Sequence[Mapping[str, Any]]) -> str:
    """The memory block in a narrator prompt: the system message opening with the preamble
    ("" when the prompt has none)."""
    for message in messages:
        content = str(message.get("content") or "")
        if message.get("role") == "system" and PREAMBLE in content:
            start = content.index(PREAMBLE)
            return content[start:]
    return ""


def agent_cost(messages: Sequence[Mapping[str, Any]], count: TokenCounter) -> int:
    """Tokens of a memory-agent request that depend on the memory store: its instructions,
    the listing and the hints. The turn's own transcript ("Latest turn" on) is left out: its
    length is the players' doing (the floor-300 probe message is ten times longer)."""
    total = 0
    for message in messages:
        content = str(message.get("content") or "")
        total += count(content.split("Latest turn (data, quoted):", 1)[0])
    return total


@dataclass
class Table:
    """A service ready to play the story, and what it is made of."""

    service: TavernService
    memory: MemoryService
    scheduler: MemoryScheduler
    model: StoryModel
    events: EventLog
    clock: FakeClock
    server: FakeOpenAIServer
    count: TokenCounter
    realm_id: str = ""
    session_id: str = ""
    branch_id: str = ""

    async def play(self, floor: Mapping[str, Any]) -> ReplyView:
        """One floor: the user's line through ``respond``, the after-commit memory work, and
        a scheduler tick (compaction, decay, expiry as they fall due)."""
        n = int(floor["floor"])
        self.clock.current = T0 + n * FLOOR_TIME
        self.model.floor = floor
        reply = await self.service.respond(
            KEY, MAIN_BRANCH, [UserLine(speaker=ANN, text=str(floor["user"]))]
        )
        await self.service.drain()
        await self.scheduler.tick()
        return reply


@asynccontextmanager
async def open_table(
    tmp_path: Path,
    *,
    settings: MemorySettings,
    kind: str = "sqlite",
    pg_url: str | None = None,
    max_requests: int = 1000,
) -> AsyncIterator[Table]:
    """The application's wiring on a fresh database, with the session in compat_plus and
    the memory slot enabled."""
    model = StoryModel()
    clock, events = FakeClock(current=T0), EventLog()
    async with (
        FakeOpenAIServer(
            responder=model, max_requests=max_requests, hang_limit_s=5.0, lifetime_s=600.0
        ) as server,
        open_test_storage(kind, tmp_path=tmp_path, pg_url=pg_url) as storage,
    ):
        pool = ChatModelPool()
        try:
            table = await _build(storage, server, pool, model, clock, events, settings)
            try:
                yield table
            finally:
                await table.service.aclose()
        finally:
            await pool.aclose()


async def _build(
    storage: SqlStorage,
    server: FakeOpenAIServer,
    pool: ChatModelPool,
    model: StoryModel,
    clock: FakeClock,
    events: EventLog,
    settings: MemorySettings,
) -> Table:
    profile = LLMProfile(
        id="environment",
        provider="openai",
        base_url=server.base_url,
        model=MODEL,
        timeout_s=10.0,
        max_retries=0,
    )

    def model_for(p: LLMProfile) -> Any:
        return pool.for_profile(p, NoSecretCipher(), {})

    memory = build_memory_service(
        storage,
        model=model_for(profile),
        model_name=MODEL,
        events=events,
        clock=clock,
        settings=settings,
    )
    # Sequential ids instead of the application's random ones: a failure replays exactly.
    memory.new_id = SequentialIds("mem")
    service = TavernService(
        storage,
        model_for=model_for,
        default_profile=profile,
        events=events,
        clock=clock,
        memory=memory,
    )
    await service.start()
    await service.open_session(KEY)
    await service.configure(KEY, prompt_mode="compat_plus", slots=["narrator", "memory"])
    scheduler = MemoryScheduler(
        memory.repo, memory, clock=clock, floors=timeline_floors(service.timeline)
    )
    await scheduler.recover()
    session = await service.timeline.find_session(KEY.platform, KEY.key)
    assert session is not None
    branch = await service.timeline.branch(session.id, MAIN_BRANCH)
    return Table(
        service=service,
        memory=memory,
        scheduler=scheduler,
        model=model,
        events=events,
        clock=clock,
        server=server,
        count=counter_for_model(MODEL).count,
        realm_id=str(session.realm_id),
        session_id=str(session.id),
        branch_id=str(branch.id),
    )
