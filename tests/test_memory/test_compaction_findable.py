"""Compaction keeps every fact findable (issue 18): whole sources in the summariser's request,
step-wise summarising past the request budget, compacted records found by a query search, and
no silent cut of a long summary."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine.memory.compaction import (
    MAX_COMPACTED_SUMMARY_CHARS,
    CompactionPolicy,
    CompactionRequest,
    build_compaction_messages,
    plan_compaction,
    run_compaction,
)
from engine.memory.compaction_steps import (
    MAX_COMPACTION_REQUEST_CHARS,
    MAX_COMPACTION_ROUNDS,
    SourcePart,
    summarise_in_steps,
)
from engine.memory.errors import MemoryPolicyError
from engine.memory.lineage import LineageSegment, partition_visible, visible_records
from engine.memory.plan import Diagnostic, LifecycleChange, MutationPlan
from engine.memory.records import (
    Lifecycle,
    MemoryKind,
    MemoryRecord,
    MemoryRelation,
    MemoryScope,
    RelationKind,
    SequentialIds,
)
from engine.memory.search import search_memories
from tests.fakes.memory_repo import InMemoryMemoryRepository
from tests.test_memory.helpers import MAIN, T0, record, view


def micro(floor: int, text: str) -> MemoryRecord:
    return record(
        f"m{floor}",
        text,
        kind=MemoryKind.SUMMARY,
        scope=MemoryScope.CHAT,
        floor=floor,
        importance=0.6,
    )


def long_text(floor: int, words: int = 120) -> str:
    """A source of several sentences, its marker sentence last (past 600 characters)."""
    filler = " ".join(f"word{floor}x{i}" for i in range(words))
    return f"Floor {floor} opens. {filler}. The marker of floor {floor} is at the end."


class Recorder:
    """A summariser that keeps every request and answers with what it is given (or ``reply``)."""

    def __init__(self, reply: str | None = None) -> None:
        self.requests: list[CompactionRequest] = []
        self.reply = reply

    async def __call__(self, request: CompactionRequest) -> str:
        self.requests.append(request)
        return self.reply if self.reply is not None else "\n".join(request.texts)


async def test_a_fold_of_long_sources_shows_every_source_whole() -> None:
    micros = [micro(f, long_text(f)) for f in range(1, 13)]
    assert all(len(m.text) > 600 for m in micros)
    task = plan_compaction(micros, head_floor=12)
    assert task is not None
    recorder = Recorder(reply="short")
    await run_compaction(
        task, summariser=recorder, now=T0, head_floor=12, new_id=SequentialIds("M")
    )
    (request,) = recorder.requests  # 8 sources of ~1,100 characters fit one request
    shown = str(build_compaction_messages(request)[-1].content)
    for source in task.sources:
        assert f"The marker of floor {source.created_floor} is at the end." in shown
        assert source.text in shown  # whole, word for word


async def test_past_the_request_budget_a_fold_is_summarised_in_steps_never_cut() -> None:
    micros = [micro(f, long_text(f)) for f in range(1, 13)]
    policy = CompactionPolicy(max_request_chars=2_500)
    task = plan_compaction(micros, head_floor=12, policy=policy)
    assert task is not None
    recorder = Recorder()  # repeats what it is shown: answers never shrink
    plan = await run_compaction(
        task, summariser=recorder, now=T0, head_floor=12, new_id=SequentialIds("M"), policy=policy
    )
    assert len(recorder.requests) > 1
    assert all(sum(map(len, r.texts)) <= 2_500 for r in recorder.requests)
    # Every source reaches exactly one request whole, the batches in story order with their
    # own floors, the first from the task's coverage start and the last to its end.
    shown = [text for r in recorder.requests for text in r.texts]
    assert shown == [s.text for s in task.sources]
    spans = [(r.coverage_start, r.coverage_end) for r in recorder.requests]
    assert spans[0][0] == task.coverage_start and spans[-1][1] == task.coverage_end
    assert all(a[1] < b[0] for a, b in zip(spans, spans[1:], strict=False))
    # Answers that did not shrink are joined: the summary keeps every source.
    (summary,) = plan.new_records
    for source in task.sources:
        assert source.text in summary.text
    assert not plan.diagnostics


async def test_shrinking_answers_are_condensed_again_up_to_the_round_limit() -> None:
    parts = [SourcePart(text="x" * 400, start=f, end=f) for f in range(1, 9)]
    recorder = Recorder(reply="a shorter answer")
    answer = await summarise_in_steps(2, parts, recorder, max_request_chars=1_000)
    # Round 1: 8 sources of 400 in batches of 2 (4 calls); their answers fit one call.
    assert [len(r.texts) for r in recorder.requests] == [2, 2, 2, 2, 4]
    assert recorder.requests[-1].texts == ("a shorter answer",) * 4
    assert (recorder.requests[-1].coverage_start, recorder.requests[-1].coverage_end) == (1, 8)
    assert answer == "a shorter answer"
    # With one round allowed the first round's answers are joined instead.
    once = Recorder(reply="a shorter answer")
    joined = await summarise_in_steps(2, parts, once, max_request_chars=1_000, max_rounds=1)
    assert len(once.requests) == 4 and joined == "\n".join(["a shorter answer"] * 4)
    assert MAX_COMPACTION_ROUNDS >= 2 and MAX_COMPACTION_REQUEST_CHARS >= 4 * 600


async def test_a_source_longer_than_the_budget_is_split_with_every_word_kept() -> None:
    text = long_text(7, words=400)
    recorder = Recorder()
    answer = await summarise_in_steps(
        2, [SourcePart(text=text, start=7, end=7)], recorder, max_request_chars=500
    )
    assert len(recorder.requests) > 1
    assert all(len(t) <= 500 for r in recorder.requests for t in r.texts)
    assert answer.split() == text.split()  # nothing dropped, nothing reordered
    # A "word" longer than the budget is cut into pieces, still all of it.
    blob = "z" * 1_234
    pieces = Recorder()
    assert (
        await summarise_in_steps(
            2, [SourcePart(text=blob, start=1, end=1)], pieces, max_request_chars=500
        )
    ).replace("\n", "") == blob


async def test_an_empty_step_answer_stands_for_its_batch() -> None:
    parts = [SourcePart(text=f"fact {f} " + "y" * 300, start=f, end=f) for f in range(1, 5)]
    notes: list[Diagnostic] = []
    answer = await summarise_in_steps(
        2, parts, Recorder(reply=" "), max_request_chars=700, notes=notes
    )
    assert all(f"fact {f} " in answer for f in range(1, 5))
    assert {n.code for n in notes} == {"empty_summary"}


async def test_a_bounded_summary_warns_and_cuts_at_a_word() -> None:
    task = plan_compaction([micro(f, f"event {f}") for f in range(1, 13)], head_floor=12)
    assert task is not None
    policy = CompactionPolicy(max_summary_chars=50)
    plan = await run_compaction(
        task,
        summariser=Recorder(reply="alpha beta gamma " * 10),
        now=T0,
        head_floor=12,
        new_id=SequentialIds("M"),
        policy=policy,
    )
    (summary,) = plan.new_records
    assert len(summary.text) <= 50 and summary.text.endswith(("alpha", "beta", "gamma"))
    (note,) = plan.diagnostics
    assert note.code == "summary_bounded" and "max_summary_chars=50" in note.message
    assert "stay searchable" in note.message
    # Under the bound nothing is cut and nothing warned: the whole summary is kept.
    whole = await run_compaction(
        task,
        summariser=Recorder(reply="alpha beta " * 500),
        now=T0,
        head_floor=12,
        new_id=SequentialIds("N"),
    )
    assert len(whole.new_records[0].text) == len(("alpha beta " * 500).strip())
    assert not whole.diagnostics and MAX_COMPACTED_SUMMARY_CHARS > 5_500


def test_request_limits_are_validated() -> None:
    for bad in ({"max_request_chars": 0}, {"max_rounds": 0}, {"max_summary_chars": 0}):
        with pytest.raises(MemoryPolicyError):
            CompactionPolicy(**bad)


async def compacted_repo() -> tuple[InMemoryMemoryRepository, MutationPlan]:
    repo = InMemoryMemoryRepository()
    texts = {f: f"On floor {f} the party rested." for f in range(1, 13)}
    texts[3] = "Mira hid the silver key under the lighthouse stairs."
    await repo.add_records([micro(f, t) for f, t in texts.items()])
    task = plan_compaction(list(repo.records.values()), head_floor=12)
    assert task is not None
    plan = await run_compaction(
        task,
        summariser=Recorder(reply="The party travelled north."),
        now=T0,
        head_floor=12,
        new_id=SequentialIds("M"),
    )
    await repo.apply_plan(plan)
    return repo, plan


async def test_compacted_records_are_found_by_a_query_search() -> None:
    repo, plan = await compacted_repo()
    records, relations = list(repo.records.values()), list(repo.relations)
    assert repo.records["m3"].lifecycle is Lifecycle.COMPACTED  # nothing deleted
    hits = search_memories(records, relations, view=view(13), query="silver key lighthouse")
    assert [h.record.id for h in hits] == ["m3"] and hits[0].compacted
    # The overview set leaves it out; the partition names it compacted, the summary live.
    assert "m3" not in {r.id for r in visible_records(records, relations, view(13))}
    parts = partition_visible(records, relations, view(13))
    assert {r.id for r in parts.compacted} == {f"m{f}" for f in range(1, 9)}
    assert plan.new_records[0].id in {r.id for r in parts.live}
    assert parts.compacted_ids == {f"m{f}" for f in range(1, 9)}
    assert [r.id for r in parts.searchable][: len(parts.live)] == [r.id for r in parts.live]
    live_hits = search_memories(records, relations, view=view(13), query="party north")
    assert live_hits[0].record.id == plan.new_records[0].id and not live_hits[0].compacted


async def test_updated_deprecated_or_forked_records_keep_their_visibility() -> None:
    repo, _ = await compacted_repo()
    records, relations = list(repo.records.values()), list(repo.relations)
    # A fork that branched off before the compaction still sees the micros as live.
    fork = view(
        5,
        branch="fork",
        lineage=(LineageSegment(branch_id="fork"), LineageSegment(branch_id=MAIN, until_floor=4)),
    )
    fork_parts = partition_visible(records, relations, fork)
    assert "m3" in {r.id for r in fork_parts.live} and not fork_parts.compacted
    # A compacted record later forgotten, or superseded by an update, is not searchable.
    gone = LifecycleChange(
        record_id="m3",
        expected=Lifecycle.COMPACTED,
        new=Lifecycle.DEPRECATED,
        at=T0 + timedelta(hours=1),
        ended_branch=None,
        ended_floor=None,
    )
    await repo.apply_plan(MutationPlan(changes=(gone,)))
    records = list(repo.records.values())
    assert not search_memories(records, relations, view=view(13), query="silver key")
    newer = record("f1", "the key moved", floor=13)
    update = MemoryRelation(
        source_id="f1", target_id="m4", kind=RelationKind.UPDATES, created_at=T0, floor_no=13
    )
    parts = partition_visible([*records, newer], [*relations, update], view(14))
    assert "m4" not in {r.id for r in parts.searchable}
