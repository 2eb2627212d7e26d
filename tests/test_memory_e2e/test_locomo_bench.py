"""The LoCoMo memory benchmark (issue 18): its scorer on hand-made cases, and its whole
pipeline on a slice of conv-26 (two sessions, three questions) on both paths.

The shared data is read where it is (``../shared/locomo``), never copied.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.locomo_data import Conversation, load_conversation, sample_questions
from bench.locomo_scoring import (
    bm25_order,
    evidence_share,
    memory_block,
    oracle_order,
    pack,
    recency_order,
    stored_share,
)
from bench.memory_locomo import MODEL, IdealSummariser, PathName, PathResult, run_path
from engine.memory.compaction import CompactionRequest
from engine.memory.injection import MAX_INJECTED_ITEMS, PREAMBLE, render_block
from engine.memory.records import (
    MICRO_TIER,
    MemoryKind,
    MemoryRecord,
    MemoryScope,
    MemorySource,
    Provenance,
)
from engine.memory.sanitize import MAX_INJECTED_ITEM_CHARS
from engine.prompt.tokens import counter_for_model
from tests.conftest import SHARED

LOCOMO = SHARED / "locomo" / "locomo10.zip"
SLICE_SESSIONS = 2
SLICE_QUESTIONS = 3
SEED = 18
COUNT = counter_for_model(MODEL).count
WHEN = datetime(2023, 5, 8, tzinfo=UTC)


def _record(
    rid: str, text: str, floor: int, kind: MemoryKind = MemoryKind.SUMMARY
) -> MemoryRecord:
    return MemoryRecord(
        id=rid,
        kind=kind,
        scope=MemoryScope.BRANCH,
        scope_id="1",
        realm_id="r",
        session_id="s",
        origin_branch="1",
        text=text,
        tier=MICRO_TIER if kind is MemoryKind.SUMMARY else None,
        provenance=Provenance(source=MemorySource.EXTRACTION, floor_no=floor),
        created_at=WHEN,
        created_floor=floor,
        coverage_start=floor if kind is MemoryKind.SUMMARY else None,
        coverage_end=floor if kind is MemoryKind.SUMMARY else None,
    )


# ---------------------------------------------------------------------------- the scorer


def test_evidence_share_counts_observations_present_word_for_word() -> None:
    a = "Caroline attended an LGBTQ support group recently."
    b = "Melanie painted a lake sunrise last year."
    block = (
        f"{PREAMBLE}\n[Recent Micro Summaries]\n"
        "- Caroline attended an LGBTQ  support\ngroup recently."
    )
    assert evidence_share([a], block) == 1.0  # present (whitespace folded)
    assert evidence_share([b], block) == 0.0  # absent
    assert evidence_share([a, b], block) == 0.5  # half
    assert evidence_share([a, b], "") == 0.0
    assert evidence_share([], block) == 0.0  # no evidence scores nothing, never 1
    # A cut observation is not present: only its whole text counts.
    assert evidence_share([a], "Caroline attended an LGBTQ support group") == 0.0


def test_stored_share_looks_in_every_record() -> None:
    records = [_record("m1", "one.\ntwo.", 1), _record("m2", "three.", 2)]
    assert stored_share(["one.", "two.", "three.", "four."], records) == 0.75
    assert stored_share(["four."], records) == 0.0


def test_pack_keeps_the_order_and_the_budget() -> None:
    records = [_record(f"m{i}", f"fact number {i} " + "word " * 30, i) for i in range(1, 9)]
    block = pack(
        records[::-1],
        budget=120,
        count=COUNT,
        max_items=MAX_INJECTED_ITEMS,
        max_item_chars=MAX_INJECTED_ITEM_CHARS,
    )
    assert 0 < COUNT(block) <= 120
    assert "fact number 8 " in block and "fact number 1 " not in block  # newest first here
    everything = pack(
        records, budget=10_000, count=COUNT, max_items=3, max_item_chars=MAX_INJECTED_ITEM_CHARS
    )
    assert everything == render_block(records[:3], max_item_chars=MAX_INJECTED_ITEM_CHARS)


def test_contender_orders() -> None:
    records = [
        _record("m1", "Caroline went to a support group.", 1),
        _record("m2", "Melanie painted a sunrise.", 2),
        _record("m3", "Melanie went swimming with the kids. Melanie painted a sunrise.", 3),
    ]
    assert [r.id for r in recency_order(records, "anything")] == ["m3", "m2", "m1"]
    assert bm25_order(records, "support group")[0].id == "m1"
    oracle = oracle_order(records, ["Melanie painted a sunrise.", "Melanie went swimming"])
    assert [r.id for r in oracle] == ["m3", "m2"]  # the record with both first; m1 left out


async def test_ideal_summariser_says_what_it_is_shown_and_counts_the_losses() -> None:
    head, tail = "First observation here.", "The tail observation."
    long_source = f"{head}\n" + "filler words " * 60 + f"\n{tail}"  # over 600 characters
    short = "A short source."
    summariser = IdealSummariser()
    answer = await summariser(
        CompactionRequest(tier=2, texts=(long_source, short), coverage_start=1, coverage_end=4)
    )
    # A fold shows each source whole (issue 18), so the ideal answer holds all of it.
    assert head in answer and short in answer and tail in answer
    assert summariser.losses([head, tail, short], cap=10_000) == (0, 0)
    # A cap that cuts the answer before its last line loses that line to the cap.
    assert summariser.losses([head, tail, short], cap=len(answer) - len(short)) == (0, 1)


def test_memory_block_is_read_from_the_prompt() -> None:
    block = f"{PREAMBLE}\n[Memory Facts]\n- a: b"
    messages = [
        {"role": "system", "content": "You are Melanie."},
        {"role": "system", "content": f"Before.\n{block}\nAfter the block."},
        {"role": "user", "content": "Hi"},
    ]
    assert memory_block(messages) == block
    assert memory_block(messages[:1]) == ""


# ---------------------------------------------------------------------------- the data


def test_conversation_maps_every_turn_to_one_floor() -> None:
    full = load_conversation(LOCOMO)
    assert len(full.observations) == 184
    played = [d for f in full.floors for d in f.dia_ids]
    assert len(played) == 419 and len(set(played)) == 419
    assert sum(len(f.observations) for f in full.floors) == 184
    first = full.floors[0]
    assert first.user_text.startswith("Hey Mel!") and first.reply_text.startswith("Hey Caroline!")
    # Session 2 opens with Melanie: its first floor's user line is the session's date.
    opening = next(f for f in full.floors if f.session == 2)
    assert opening.user_text.startswith("(") and opening.dia_ids == ("D2:1",)
    questions = sample_questions(full, 40, SEED)
    assert len(questions) == 40 and questions == sample_questions(full, 40, SEED)
    assert all(full.evidence(q) for q in questions)


# ---------------------------------------------------------------------------- the pipeline


@pytest.fixture(scope="module")
def tiny() -> Conversation:
    return load_conversation(LOCOMO, sessions=SLICE_SESSIONS)


async def _run(
    tiny: Conversation, path: PathName, tmp_path: Path, budget: int = 500
) -> PathResult:
    questions = sample_questions(tiny, SLICE_QUESTIONS, SEED)
    assert len(questions) == SLICE_QUESTIONS
    return await run_path(tiny, questions, path=path, budget=budget, workdir=tmp_path)


async def test_tag_path_on_a_slice(tiny: Conversation, tmp_path: Path) -> None:
    result = await _run(tiny, "tag", tmp_path)
    assert result.floors == len(tiny.floors) == 18
    kinds = {r.kind for r in result.active}
    assert kinds == {MemoryKind.SUMMARY}  # the tags became micros; no fact was written
    assert any((r.tier or 0) > MICRO_TIER for r in result.active)  # compaction ran
    # The ideal summariser keeps these short micros whole.
    assert result.stored == 1.0
    assert (result.lost_to_view, result.lost_to_cap) == (0, 0)
    for block in result.blocks["tavernbot"]:
        assert block.startswith(PREAMBLE) and 0 < COUNT(block) <= 500
    assert result.scores["oracle"] == [1.0] * SLICE_QUESTIONS
    for name in ("tavernbot", "bm25", "recency"):
        assert all(0.0 <= s <= 1.0 for s in result.scores[name])


async def test_fact_path_on_a_slice(tiny: Conversation, tmp_path: Path) -> None:
    result = await _run(tiny, "fact", tmp_path, budget=60)
    assert {r.kind for r in result.active} == {MemoryKind.FACT}
    assert sorted(r.text for r in result.active) == sorted(o.text for o in tiny.observations)
    assert result.stored == 1.0
    for block in result.blocks["tavernbot"]:
        assert 0 < COUNT(block) <= 60
    # 60 tokens hold one or two facts: recency cannot carry the evidence of every question,
    # and the oracle still carries some.
    assert result.mean("recency") < 1.0
    assert result.mean("oracle") > 0.0
