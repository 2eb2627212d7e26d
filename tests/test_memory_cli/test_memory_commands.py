"""``tavernbot memory list|search|forget|compact`` on a temporary SQLite database."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from adapters.storage import open_storage
from adapters.storage.memory_repo import SqlMemoryRepository
from bot.cli import build_parser, main
from bot.cli_commands.memory import DEFAULT_SEARCH_LIMIT, MAX_LINE_CHARS
from engine.memory.jobs import JobStatus, JobType
from engine.memory.ports import MemoryQuery
from engine.memory.records import Lifecycle, SequentialIds
from engine.memory.scoping import viewpoint_for
from engine.memory.service import MemoryService
from engine.timeline.service import TimelineService
from engine.timeline.values import NewMessage
from tests.conftest import ROOT
from tests.test_memory.helpers import count_tokens
from tests.test_memory_storage.support import FakeClock, ScriptedModel

SESSION = "demo"


async def _seed(url: str, *, micros: int = 2) -> dict[str, str]:
    """A console session with two committed floors, two facts and ``micros`` micro summaries."""
    storage = await open_storage(url)
    try:
        timeline = TimelineService(storage)
        opened = await timeline.open_session("console", "local", SESSION)
        for n in (1, 2):
            floor = await timeline.open_floor(opened.main.id, [NewMessage(role="user", raw="hi")])
            await timeline.start_generating(floor.id)
            page = await timeline.add_page(floor.id)
            await timeline.commit_page(
                page.id, messages=[NewMessage(role="assistant", raw=f"r{n}")]
            )
        answer = json.dumps(
            {
                "facts_add": [
                    {"key": "alice.ship", "value": "the Gull", "importance": 0.8},
                    {"key": "weather", "value": "a storm is coming"},
                ]
            }
        )
        model = ScriptedModel(answers=[answer])
        service = MemoryService(
            SqlMemoryRepository(storage.engine),
            count=count_tokens,
            clock=FakeClock(),
            model=model,
            new_id=SequentialIds("m"),
        )
        view = viewpoint_for(opened.session, opened.main, [opened.main], 2)
        await service.after_commit(view, user_text="hi", reply_text="r2")
        for floor in range(1, micros + 1):
            await service.after_commit(
                viewpoint_for(opened.session, opened.main, [opened.main], floor),
                user_text="u",
                reply_text="r",
                tag_summaries=[f"Scene {floor} played out. More."],
                run_agent=False,
            )
        records = await service.repo.query_records(
            MemoryQuery(realm_id=view.realm_id, session_id=view.session_id)
        )
        return {r.key or r.text: r.id for r in records}
    finally:
        await storage.close()


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'bot.db'}"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    return url


def test_list_shows_the_sessions_memories(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    ids = asyncio.run(_seed(db))
    assert main(["memory", "list", "--session", SESSION]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4
    assert any(ids["alice.ship"] in line and "alice.ship: the Gull" in line for line in out)
    assert any("summary/micro" in line and "Scene 2 played out" in line for line in out)
    assert main(["memory", "list", "--session", SESSION, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    by_key = {row["key"]: row for row in rows}
    assert by_key["alice.ship"]["text"] == "the Gull" and by_key["alice.ship"]["importance"] == 0.8
    assert {row["kind"] for row in rows} == {"fact", "summary"}
    assert all(row["lifecycle"] == "active" for row in rows)


def test_search_finds_matching_memories(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    ids = asyncio.run(_seed(db))
    assert main(["memory", "search", "--session", SESSION, "storm"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert ids["weather"] in line and "score" in line
    assert main(["memory", "search", "--session", SESSION, "gull", "--json"]) == 0
    (hit,) = json.loads(capsys.readouterr().out)
    assert hit["id"] == ids["alice.ship"] and hit["score"] > 0
    assert main(["memory", "search", "--session", SESSION, "dragons"]) == 0
    assert "no memories match" in capsys.readouterr().out


def test_forget_deprecates_one_memory(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    ids = asyncio.run(_seed(db))
    assert main(["memory", "forget", ids["weather"]]) == 0
    assert "forgotten" in capsys.readouterr().out
    assert main(["memory", "list", "--session", SESSION, "--json"]) == 0
    assert ids["weather"] not in {row["id"] for row in json.loads(capsys.readouterr().out)}
    assert main(["memory", "list", "--session", SESSION, "--json", "--all"]) == 0
    rows = {row["id"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows[ids["weather"]]["lifecycle"] == Lifecycle.DEPRECATED.value
    assert main(["memory", "forget", "no-such-id"]) == 1
    assert "no memory with id 'no-such-id'" in capsys.readouterr().err


def test_compact_runs_due_compaction_deterministically(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_seed(db, micros=12))
    assert main(["memory", "compact", "--session", SESSION]) == 0
    out = capsys.readouterr().out
    expected = "Floors 1-8: " + ". ".join(f"Scene {i} played out" for i in range(1, 9)) + "."
    assert "compacted 8 summaries into" in out and "summary/macro" in out
    assert main(["memory", "compact", "--session", SESSION]) == 0
    assert capsys.readouterr().out.strip() == "nothing to compact"
    assert main(["memory", "list", "--session", SESSION, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["tier"] for r in rows if r["kind"] == "summary"].count("micro") == 4
    assert [(r["coverage"], r["text"]) for r in rows if r["tier"] == "macro"] == [
        ([1, 8], expected)
    ]


def test_search_still_finds_what_compaction_folded(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = asyncio.run(_seed(db, micros=12))
    assert main(["memory", "compact", "--session", SESSION]) == 0
    assert "compacted 8 summaries into" in capsys.readouterr().out
    # The offline summary keeps only each micro's first sentence; the micro stays findable.
    assert main(["memory", "search", "--session", SESSION, "More", "--json"]) == 0
    found = {hit["id"] for hit in json.loads(capsys.readouterr().out)}
    assert ids["Scene 3 played out. More."] in found
    assert {ids[f"Scene {i} played out. More."] for i in range(1, 13)} <= found


def test_force_compacts_what_is_not_yet_due(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    asyncio.run(_seed(db, micros=7))
    assert main(["memory", "compact", "--session", SESSION]) == 0
    assert capsys.readouterr().out.strip() == "nothing to compact"
    assert main(["memory", "compact", "--session", SESSION, "--force"]) == 0
    assert "compacted 3 summaries" in capsys.readouterr().out


def test_an_unknown_session_is_an_error(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "list", "--session", "nobody"]) == 1
    assert "tavernbot chat --session nobody" in capsys.readouterr().err


def test_the_console_script_runs_the_command(db: str) -> None:
    asyncio.run(_seed(db))
    done = subprocess.run(
        [sys.executable, "-m", "bot", "memory", "search", "--session", SESSION, "gull"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"DATABASE_URL": db, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "alice.ship: the Gull" in done.stdout


async def _kill_compaction(url: str) -> str:
    storage = await open_storage(url)
    try:
        repo = SqlMemoryRepository(storage.engine)
        (state,) = await repo.list_jobs(JobType.COMPACT)
        dead = replace(
            state,
            status=JobStatus.DEAD_LETTER,
            revision=state.revision + 1,
            attempts=5,
            next_run_at=None,
            last_error="memory model unreachable",
        )
        assert await repo.save_job(dead, expected_revision=state.revision)
        return dead.key
    finally:
        await storage.close()


def test_jobs_lists_states_and_revive_brings_back_a_dead_job(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_seed(db))
    key = asyncio.run(_kill_compaction(db))
    assert main(["memory", "jobs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    (dead,) = [line for line in lines if line.startswith(key)]
    assert "dead_letter" in dead and "error: memory model unreachable" in dead
    assert main(["memory", "revive", key]) == 0
    assert f"revived: {key}" in capsys.readouterr().out
    assert main(["memory", "jobs", "--json"]) == 0
    rows = {row["job"]: row for row in json.loads(capsys.readouterr().out)}
    assert (rows[key]["status"], rows[key]["attempts"]) == ("pending", 0)
    assert main(["memory", "revive", key]) == 1  # no longer dead
    assert "not dead_letter" in capsys.readouterr().err
    assert main(["memory", "revive", "nonsense"]) == 1
    assert main(["memory", "revive", "compact:nope"]) == 1


async def _add_long_fact(url: str) -> None:
    storage = await open_storage(url)
    try:
        timeline = TimelineService(storage)
        opened = await timeline.open_session("console", "local", SESSION)
        answer = json.dumps({"facts_add": [{"key": "saga", "value": "gull " * 90}]})
        service = MemoryService(
            SqlMemoryRepository(storage.engine),
            count=count_tokens,
            clock=FakeClock(),
            model=ScriptedModel(answers=[answer]),
            new_id=SequentialIds("long"),
        )
        await service.after_commit(
            viewpoint_for(opened.session, opened.main, [opened.main], 3),
            user_text="u",
            reply_text="r",
        )
    finally:
        await storage.close()


def test_long_texts_are_cut_and_search_is_limited(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_seed(db))
    asyncio.run(_add_long_fact(db))
    assert main(["memory", "list", "--session", SESSION]) == 0
    (saga,) = [line for line in capsys.readouterr().out.splitlines() if "saga: " in line]
    text = saga.split("  ")[-1]
    assert len(text) == MAX_LINE_CHARS and text.endswith("…")
    assert main(["memory", "search", "--session", SESSION, "gull", "--limit", "1"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1
    assert main(["memory", "search", "--session", SESSION, "gull"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 2
    parsed = build_parser().parse_args(["memory", "search", "--session", SESSION, "gull"])
    assert parsed.limit == DEFAULT_SEARCH_LIMIT
