"""Benchmark (issue 18): how much of a LoCoMo question's evidence the memory block carries.

LoCoMo conversation ``conv-26`` (Caroline and Melanie: 19 dated sessions, 419 turns, 184 gold
observations) is played through the real pipeline: ``TavernService`` (what the console runs)
on SQLite in a temporary directory, a console session in ``compat_plus`` with the memory slot,
the openai provider talking to the loopback fake model server, the memory agent after every
floor and the memory scheduler's jobs (compaction among them) ticked after every floor, then
ticked until nothing is due.

Floors: Caroline (``speaker_a``) is the user and Melanie (``speaker_b``) the character. A floor
is a Caroline line and the Melanie line that follows it in the same session; a session that
opens with Melanie gets a first floor whose user line is the session's date, and a Caroline
line nobody answers before the session ends gets the reply ``…``. The character's replies are
scripted (her LoCoMo lines; a shared image adds ``[shares CAPTION]``). A turn's gold
observations (LoCoMo's per-session ``observation`` lists, each naming its dialogue id) belong
to the floor holding that dialogue id.

Two paths:

* **tag**: the reply of a floor carries one ``<summary>`` per gold observation of the floor;
  the memory agent plans nothing (``{}``), so the tags become the floor's micro summary, and
  compaction folds micros into macros and higher tiers. The compaction summariser is ideal:
  it answers with exactly the source texts the memory slot's compaction request shows it
  (:func:`engine.memory.compaction.build_compaction_messages`), so whatever compaction loses
  is lost by the pipeline, not by a model.
* **fact**: the replies carry no tags; the memory agent writes one fact per gold observation
  of the floor (key ``SPEAKER N``, the observation word for word as the value). Facts are
  never compacted.

Then a seeded sample of questions (those whose evidence names at least one turn with a gold
observation) is asked as dry runs of the next message (the prompt it would get, read without
marking anything used), and the memory block of each prompt is read. A question's score is
the share of its evidence observations (the gold observations of its ``evidence`` turns)
present word for word (whitespace folded) in the block. Contenders on the same active
records, packed in their own order into the same budget by the same renderer
(:func:`engine.memory.injection.render_block`, the same item cap and line cut): plain BM25 of
the question (:mod:`engine.memory.bm25`, ties newest first), recency (newest first) and an
oracle that takes the records holding the most evidence first. "Stored" is the share of all
gold observations present word for word in some active record: what the overview holds
(compacted records stay searchable, :func:`engine.memory.lineage.partition_visible`, but only
active ones make the overview).

Run from the repository root: ``python bench/memory_locomo.py [--questions N] [--seed S]
[--budget T]``. Exits 0; the issue's targets are printed beside the numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapters.llm import ChatModelPool  # noqa: E402
from adapters.storage import open_storage  # noqa: E402
from adapters.storage.vector_repo import SqlVectorStore  # noqa: E402
from bench.locomo_data import (  # noqa: E402
    Conversation,
    Floor,
    Question,
    load_conversation,
    sample_questions,
)
from bench.locomo_dates import (  # noqa: E402
    TemporalFigure,
    date_session,
    temporal_figure,
    temporal_questions,
    undated,
)
from bench.locomo_embeddings import (  # noqa: E402
    CONTENDER,
    EmbeddingsChoice,
    add_arguments,
    choice_from,
    fused_blocks,
    fused_line,
)
from bench.locomo_scoring import (  # noqa: E402
    bm25_order,
    evidence_share,
    fold,
    memory_block,
    oracle_order,
    pack,
    recency_order,
    stored_share,
)
from bot.scheduler import MemoryScheduler, build_memory_service, timeline_floors  # noqa: E402
from engine.memory.agent_context import AGENT_SYSTEM_PROMPT  # noqa: E402
from engine.memory.compaction import (  # noqa: E402
    CompactionRequest,
    build_compaction_messages,
)
from engine.memory.injection import (  # noqa: E402
    MEMORY_BUDGET_TOKENS,
    TokenCounter,
)
from engine.memory.ports import MemoryQuery  # noqa: E402
from engine.memory.records import MemoryKind, MemoryRecord, SequentialIds  # noqa: E402
from engine.memory.service import MemorySettings  # noqa: E402
from engine.memory.worker import JobOutcomeKind  # noqa: E402
from engine.prompt.tokens import counter_for_model  # noqa: E402
from engine.turns.api import MAIN_BRANCH, SessionKey, Speaker, UserLine  # noqa: E402
from engine.turns.profiles import LLMProfile, NoSecretCipher  # noqa: E402
from engine.turns.service import TavernService  # noqa: E402
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeResponse  # noqa: E402

DEFAULT_QUESTIONS = 40
DEFAULT_SEED = 18
MODEL = "gpt-4o-mini"
"""The model name the profile sends: a name the token counter knows exactly (o200k)."""
FLOOR_TIME = timedelta(minutes=20)
"""Story time the clock moves before each floor (as in the 300-floor replay test)."""
START = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
"""The clock at floor 0: conv-26's first session."""
MAX_SETTLE_TICKS = 50
"""Scheduler ticks after the last floor, at most, until no memory job is due."""
SERVER_LIFETIME_S = 3600.0
KEY = SessionKey(platform="console", realm="local", key="locomo")
PathName = Literal["tag", "fact"]
PATHS: tuple[PathName, ...] = ("tag", "fact")
CONTENDERS = ("tavernbot", "bm25", "recency", "oracle")
TARGETS: Mapping[str, str] = {
    "stored": ">= 0.95",
    "tag": ">= 0.45, ahead of bm25",
    "fact": ">= 0.85, ahead of bm25",
}
_AGENT_MARK = AGENT_SYSTEM_PROMPT.split("\n", 1)[0][:60]
_NUMBERED = re.compile(r"^\d+\. (.*)$")


# ---------------------------------------------------------------------------- the pipeline


@dataclass
class _Clock:
    current: datetime = START

    def now(self) -> datetime:
        return self.current


@dataclass
class IdealSummariser:
    """A perfect summariser: answers with exactly the source texts its request shows the
    model (numbered lines of the memory slot's compaction prompt), one per line. Keeps each
    request and answer, to tell where compaction lost what (:meth:`losses`)."""

    calls: list[tuple[CompactionRequest, str]] = field(default_factory=list)

    async def __call__(self, request: CompactionRequest) -> str:
        shown = build_compaction_messages(request)[-1].content
        lines = str(shown).splitlines()[1:]  # the first line names the span
        answer = "\n".join(m[1] for line in lines if (m := _NUMBERED.match(line)))
        self.calls.append((request, answer))
        return answer

    def losses(self, observations: Sequence[str], cap: int) -> tuple[int, int]:
        """How many ``observations`` a fold lost because its request showed the sources cut,
        and how many because the summary was cut to ``cap`` characters."""
        by_view = by_cap = 0
        for request, answer in self.calls:
            sources, said, kept = (
                fold("\n".join(request.texts)),
                fold(answer),
                fold(answer[:cap]),
            )
            for text in map(fold, observations):
                if text in sources and text not in said:
                    by_view += 1
                elif text in said and text not in kept:
                    by_cap += 1
        return by_view, by_cap


@dataclass
class LocomoModel:
    """The fake server's responder: the narrator's scripted reply (with one ``<summary>`` per
    observation on the tag path) and the memory agent's answer (facts on the fact path)."""

    path: PathName
    floor: Floor | None = None
    narrator_calls: int = 0
    agent_calls: int = 0

    def __call__(self, body: Mapping[str, Any]) -> FakeResponse:
        messages = list(body.get("messages") or [])
        first = messages[0] if messages else {}
        system = str(first.get("content") or "") if first.get("role") == "system" else ""
        if self.floor is None:
            raise AssertionError("a model request outside any floor")
        if system.startswith(_AGENT_MARK):
            self.agent_calls += 1
            return FakeReply(text=self.agent_answer(self.floor))
        self.narrator_calls += 1
        return FakeReply(text=self.reply(self.floor), chunk_chars=256)

    def reply(self, floor: Floor) -> str:
        """The narrator's raw reply for ``floor``."""
        if self.path != "tag" or not floor.observations:
            return floor.reply_text
        tags = "".join(f"<summary>{o.text}</summary>" for o in floor.observations)
        return f"{floor.reply_text}\n{tags}"

    def agent_answer(self, floor: Floor) -> str:
        """The memory agent's JSON for ``floor``: nothing on the tag path."""
        if self.path != "fact" or not floor.observations:
            return "{}"
        facts = [
            {"key": f"{o.speaker} {o.number}", "value": o.text, "scope": "chat"}
            for o in floor.observations
        ]
        return json.dumps({"facts_add": facts})


@dataclass
class PathResult:
    """What one path left: the active records, the stored share, each contender's blocks."""

    path: PathName
    floors: int
    active: list[MemoryRecord]
    stored: float
    lost_to_view: int = 0
    lost_to_cap: int = 0
    blocks: dict[str, list[str]] = field(default_factory=dict)
    scores: dict[str, list[float]] = field(default_factory=dict)
    temporal: TemporalFigure | None = None

    def mean(self, contender: str) -> float:
        values = self.scores.get(contender) or [0.0]
        return statistics.fmean(values)


async def run_path(
    conversation: Conversation,
    questions: Sequence[Question],
    *,
    path: PathName,
    budget: int,
    workdir: Path,
    embeddings: EmbeddingsChoice | None = None,
    dates: bool = False,
) -> PathResult:
    """Play the conversation on one path and score every contender on ``questions``."""
    model = LocomoModel(path=path)
    clock = _Clock()
    storage = await open_storage(f"sqlite+aiosqlite:///{workdir}/locomo-{path}.db")
    pool = ChatModelPool()
    requests = 4 * len(conversation.floors) + 100
    try:
        async with FakeOpenAIServer(
            responder=model, max_requests=requests, lifetime_s=SERVER_LIFETIME_S
        ) as server:
            profile = LLMProfile(
                id="environment",
                provider="openai",
                base_url=server.base_url,
                model=MODEL,
                timeout_s=30.0,
                max_retries=0,
            )

            def model_for(p: LLMProfile) -> Any:
                return pool.for_profile(p, NoSecretCipher(), {})

            settings = MemorySettings()
            memory = build_memory_service(
                storage, model=model_for(profile), model_name=MODEL, clock=clock
            )
            summariser = IdealSummariser()
            memory.summariser = summariser
            memory.new_id = SequentialIds("mem")  # a rerun gives the same ids
            service = TavernService(
                storage,
                model_for=model_for,
                default_profile=profile,
                clock=clock,
                memory=memory,
            )
            await service.start()
            try:
                await service.open_session(KEY)
                await service.configure(
                    KEY,
                    prompt_mode="compat_plus",
                    slots=["narrator", "memory"],
                    memory_budget=budget,
                )
                scheduler = MemoryScheduler(
                    memory.repo, memory, clock=clock, floors=timeline_floors(service.timeline)
                )
                await scheduler.recover()
                speaker = Speaker(id="locomo-user", name=conversation.user)
                previous = None
                for floor in conversation.floors:
                    clock.current = START + floor.number * FLOOR_TIME
                    model.floor = floor
                    if dates:
                        await date_session(service, KEY, MAIN_BRANCH, floor, previous)
                    previous = floor
                    await service.respond(
                        KEY, MAIN_BRANCH, [UserLine(speaker=speaker, text=floor.user_text)]
                    )
                    await service.drain()
                    await scheduler.tick()
                for _ in range(MAX_SETTLE_TICKS):
                    outcomes = await scheduler.tick()
                    if not any(o.kind is JobOutcomeKind.RAN for o in outcomes):
                        break
                session = await service.timeline.find_session(KEY.platform, KEY.key)
                assert session is not None
                active = await memory.repo.query_records(
                    MemoryQuery(realm_id=str(session.realm_id), session_id=str(session.id))
                )
                result = PathResult(
                    path=path,
                    floors=len(conversation.floors),
                    active=active,
                    stored=stored_share(
                        [o.text for o in conversation.observations],
                        [replace(r, text=undated(r.text)) for r in active] if dates else active,
                    ),
                )
                result.lost_to_view, result.lost_to_cap = summariser.losses(
                    [o.text for o in conversation.observations],
                    settings.compaction.max_summary_chars,
                )
                tavern_blocks = []
                for question in questions:
                    prompt = await service.dry_run(KEY, MAIN_BRANCH, question.text)
                    tavern_blocks.append(memory_block(prompt["messages"]))
                temporal = temporal_questions(conversation)
                temporal_blocks = []
                for question in temporal:
                    prompt = await service.dry_run(KEY, MAIN_BRANCH, question.text)
                    temporal_blocks.append(memory_block(prompt["messages"]))
                result.temporal = temporal_figure(conversation, temporal, temporal_blocks)
                if embeddings is not None:
                    result.blocks[CONTENDER] = await fused_blocks(
                        service,
                        memory,
                        key=KEY,
                        questions=questions,
                        choice=embeddings,
                        fake_url=server.base_url,
                        vectors=SqlVectorStore(storage.engine),
                    )
            finally:
                await service.aclose()
    finally:
        await pool.aclose()
        await storage.close()
    _score(result, conversation, questions, tavern_blocks, budget, memory.count, settings)
    if dates:  # evidence is matched word for word, as in an undated run
        for name, blocks in result.blocks.items():
            result.scores[name] = [
                evidence_share(conversation.evidence(q), undated(block))
                for q, block in zip(questions, blocks, strict=True)
            ]
    return result


def _score(
    result: PathResult,
    conversation: Conversation,
    questions: Sequence[Question],
    tavern_blocks: Sequence[str],
    budget: int,
    count: TokenCounter,
    settings: MemorySettings,
) -> None:
    policy = settings.injection
    records = [
        r for r in result.active if r.importance >= policy.min_importance and r.text.strip()
    ]
    orders: dict[str, Callable[[Question], list[MemoryRecord]]] = {
        "bm25": lambda q: bm25_order(records, q.text),
        "recency": lambda q: recency_order(records, q.text),
        "oracle": lambda q: oracle_order(records, conversation.evidence(q)),
    }
    result.blocks["tavernbot"] = list(tavern_blocks)
    for name, order in orders.items():
        result.blocks[name] = [
            pack(
                order(q),
                budget=budget,
                count=count,
                max_items=policy.max_items,
                max_item_chars=policy.max_item_chars,
            )
            for q in questions
        ]
    for name, blocks in result.blocks.items():
        result.scores[name] = [
            evidence_share(conversation.evidence(q), block)
            for q, block in zip(questions, blocks, strict=True)
        ]


# ---------------------------------------------------------------------------- the report


def describe_active(records: Sequence[MemoryRecord]) -> str:
    """``13 active: 4 micro, 5 macro...`` for the records a path left."""
    kinds: dict[str, int] = {}
    for r in records:
        name = r.kind.value if r.kind is not MemoryKind.SUMMARY else f"tier{r.tier}"
        kinds[name] = kinds.get(name, 0) + 1
    parts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    return f"{len(records)} active ({parts})"


def report(results: Sequence[PathResult], questions: Sequence[Question], seed: int) -> str:
    """The table the bench prints."""
    lines = [
        f"questions (seed {seed}): {', '.join(str(q.index) for q in questions)}",
        "",
        "| path | floors | active records | stored | " + " | ".join(CONTENDERS) + " | target |",
        "|---|---:|---|---:|" + "---:|" * len(CONTENDERS) + "---|",
    ]
    for r in results:
        means = " | ".join(f"{r.mean(c):.3f}" for c in CONTENDERS)
        target = (
            f"{TARGETS[r.path]}; stored {TARGETS['stored']}"
            if r.path == "tag"
            else TARGETS[r.path]
        )
        lines.append(
            f"| {r.path} | {r.floors} | {describe_active(r.active)} | {r.stored:.3f} | "
            f"{means} | {target} |"
        )
    for r in results:
        distinct = len(set(r.blocks["tavernbot"]))
        lines.append(
            f"{r.path}: {distinct} distinct tavernbot blocks over {len(questions)} questions; "
            f"compaction lost {r.lost_to_view} observations to the cut sources a fold shows "
            f"its summariser, {r.lost_to_cap} to the summary's length cap"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """``--questions N --seed S --budget T``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--questions", type=int, default=DEFAULT_QUESTIONS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--budget", type=int, default=MEMORY_BUDGET_TOKENS)
    parser.add_argument("--sessions", type=int, default=None, help="play only the first N")
    parser.add_argument(
        "--dates", action="store_true", help="set each session's date as the chat's story date"
    )
    add_arguments(parser)
    return parser.parse_args(argv)


async def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    conversation = load_conversation(sessions=args.sessions)
    questions = sample_questions(conversation, args.questions, args.seed)
    print(
        f"conv-26: {len(conversation.floors)} floors, {len(conversation.observations)} gold "
        f"observations, {len(questions)} questions, budget {args.budget} tokens "
        f"({counter_for_model(MODEL).__class__.__name__} for {MODEL})"
    )
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in PATHS:
            results.append(
                await run_path(
                    conversation,
                    questions,
                    path=path,
                    budget=args.budget,
                    workdir=Path(tmp),
                    embeddings=choice_from(args),
                    dates=args.dates,
                )
            )
    print(report(results, questions, args.seed))
    for r in results:
        if r.temporal is not None:
            print(r.temporal.line(r.path, args.dates))
    choice = choice_from(args)
    for r in results:
        if choice is not None and CONTENDER in r.scores:
            plain, bm25 = r.mean("tavernbot"), r.mean("bm25")
            print(fused_line(r.path, plain, r.mean(CONTENDER), bm25, choice.label))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
