"""Time-aware recall (issue 18): records carry the in-story date the chat gave, the memory
block shows it with relative days resolved, compaction keeps the dates, and dates never
change which memories are ranked first."""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from engine.memory.compaction import CompactionRequest
from engine.memory.injection import rank_units, render_block, select_memories
from engine.memory.records import MemoryKind
from engine.memory.service import MemorySettings
from engine.memory.story_dates import (
    MAX_STORY_DATE_CHARS,
    STORY_DATE_VARIABLE,
    dated,
    dated_lines,
    parse_story_date,
    resolve_relative,
    story_date_of,
)
from tests.fakes.memory_repo import InMemoryMemoryRepository
from tests.test_memory.helpers import T0, count_tokens, record, view
from tests.test_memory_storage.support import make_service


def test_the_date_comes_from_the_named_chat_variable_trimmed_and_bounded() -> None:
    assert STORY_DATE_VARIABLE == "date"
    assert story_date_of({"date": "  8 May   2023 "}) == "8 May 2023"
    assert story_date_of({"story_date": "Day 3"}, "story_date") == "Day 3"
    assert story_date_of({"date": ""}) is None
    assert story_date_of({}) is None
    assert story_date_of({"date": {"day": 1}}) is None
    assert story_date_of({"date": "x" * 500}) == "x" * MAX_STORY_DATE_CHARS
    assert story_date_of({"date": "8 May 2023"}, "") is None


def test_calendar_dates_parse_in_the_usual_forms_and_made_up_ones_stay_labels() -> None:
    may8 = date(2023, 5, 8)
    for text in ("8 May 2023", "8 May, 2023", "May 8, 2023", "2023-05-08", "08/05/2023"):
        assert parse_story_date(text) == may8, text
    assert parse_story_date("1:56 pm on 8 May, 2023") == may8  # LoCoMo's session dates
    assert parse_story_date("the third day of Frostfall") is None


def test_relative_days_are_resolved_against_the_story_date() -> None:
    text = "Yesterday she went to the group; 2 weeks ago she painted; last year a trip."
    assert resolve_relative(text, "8 May 2023") == (
        "Yesterday [7 May 2023] she went to the group; 2 weeks ago [24 April 2023] she"
        " painted; last year [2022] a trip."
    )
    assert resolve_relative(text, "Frostfall 3") == text
    assert resolve_relative(text, None) == text


def test_a_dated_unit_reads_with_its_date_and_an_undated_one_as_before() -> None:
    assert dated("She ran a charity race yesterday.", "1:56 pm on 8 May, 2023") == (
        "(8 May 2023) She ran a charity race yesterday [7 May 2023]."
    )
    assert dated("plain", None) == "plain"
    assert dated("plain", "Frostfall 3") == "(Frostfall 3) plain"  # not a calendar day
    assert dated_lines("one\ntwo", "Day 2") == "(Day 2) one\n(Day 2) two"
    assert dated_lines("one\ntwo", None) == "one\ntwo"


def test_the_block_shows_dates_while_ranking_stays_as_without_them() -> None:
    plain = [
        record("a", "Caroline went to the support group yesterday.", floor=1),
        record("b", "Melanie painted a lake sunrise.", floor=2),
        record("c", "Caroline is researching adoption agencies.", floor=3),
    ]
    dates = ["8 May 2023", "25 May 2023", None]
    withdates = [replace(r, story_date=d) for r, d in zip(plain, dates, strict=True)]
    kwargs = {"view": view(9), "now": T0, "message": "When did Caroline go to the group?"}
    ranked = [(u.unit.id, u.score) for u in rank_units(plain, [], **kwargs)]
    assert [(u.unit.id, u.score) for u in rank_units(withdates, [], **kwargs)] == ranked
    block = select_memories(withdates, [], count=count_tokens, **kwargs).text
    assert "(8 May 2023) Caroline went to the support group yesterday [7 May 2023]." in block
    assert "- Caroline is researching adoption agencies." in block  # undated: as before
    assert "(8 May 2023)" in render_block(withdates[:1], max_item_chars=600)


async def test_records_a_turn_writes_carry_its_story_date() -> None:
    repo = InMemoryMemoryRepository()
    service, _, _, _ = make_service(repo)
    await service.after_commit(
        view(3),
        user_text="x",
        reply_text="y",
        tag_summaries=["Caroline went to a support group."],
        run_agent=False,
        story_date="8 May 2023",
    )
    await service.after_commit(
        view(4), user_text="x", reply_text="y", tag_summaries=["Undated."], run_agent=False
    )
    stored = {r.text: r.story_date for r in repo.records.values()}
    assert stored == {"Caroline went to a support group.": "8 May 2023", "Undated.": None}
    assert MemorySettings().story_date_variable == STORY_DATE_VARIABLE


async def test_compaction_shows_its_summariser_each_source_with_its_date() -> None:
    seen: list[CompactionRequest] = []

    async def summariser(request: CompactionRequest) -> str:
        seen.append(request)
        return "\n".join(request.texts)

    repo = InMemoryMemoryRepository()
    service, _, _, _ = make_service(repo, summariser=summariser)
    micros = [
        replace(
            record(f"s{i}", f"Event {i} happened yesterday.", kind=MemoryKind.SUMMARY, floor=i),
            story_date=f"{i} May 2023",
        )
        for i in range(1, 40)
    ]
    await repo.add_records(micros)
    scopes = await service.summary_scopes(micros[0].realm_id, micros[0].session_id or "")
    await service.compact_now(scopes[0], force=True)
    assert seen, "compaction ran"
    assert "(1 May 2023) Event 1 happened yesterday [30 April 2023]." in seen[0].texts
