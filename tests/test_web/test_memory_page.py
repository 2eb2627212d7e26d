"""The memory page over a console-played session: records with their lineage and search, the
admin's edit, forget and revive through the memory service, and the refusals (a read-only
token on a write, a token of another realm) that leave everything as it was."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import aiohttp
import pytest

from engine.memory.hand_edits import MAX_EDIT_CHARS
from engine.memory.jobs import JobStatus, JobType, new_job
from engine.memory.records import MemoryScope
from engine.memory.scoping import JobScope
from tests.test_web.memory_api import TIMEOUT, auth, memory_records, post_form
from tests.test_web.played import PlayedServer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
        yield session


async def _records(http: aiohttp.ClientSession, played: PlayedServer, q: str = "") -> Any:
    return await memory_records(http, played, q=q)


async def test_records_show_tier_decay_coverage_and_the_lineage_of_a_compaction(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    records = await _records(http, played)
    (macro,) = [r for r in records.values() if r["tier"] == "macro"]
    micros = {link["other"] for link in macro["lineage"] if link["kind"] == "compacts"}
    assert len(micros) >= 3 and macro["coverage"].startswith("floors 2-")
    for micro in micros:
        assert records[micro]["lifecycle"] == "compacted"
        assert {"kind": "compacts", "direction": "in", "other": macro["id"]} in records[micro][
            "lineage"
        ]
    assert all(0 < r["decay"] <= 1 for r in records.values())
    # A compacted micro is still found by a search.
    hits = await _records(http, played, q="night 1")
    assert any("night 1." in r["text"] and r["lifecycle"] == "compacted" for r in hits.values())


async def test_the_page_renders_records_lineage_and_jobs(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    url = f"{played.url}/sessions/{played.session_id}/memory"
    async with http.get(url, headers=auth(played.token)) as response:
        html = await response.text()
    assert response.status == 200
    assert 'data-relation="compacts"' in html and "Memory jobs" in html
    assert "edit or forget" in html  # an admin token sees the forms


async def test_refused_writes_change_nothing(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    before = await _records(http, played)
    target = next(r["id"] for r in before.values() if r["lifecycle"] == "active")
    reader = played.issue("read", "console:local")
    stranger = played.issue("admin", "console:elsewhere")
    refused = await post_form(http, played, f"/memory/{target}/forget", reader)
    assert refused.status == 403
    refused = await post_form(http, played, f"/memory/{target}/edit", reader, text="changed")
    assert refused.status == 403
    hidden = await post_form(http, played, f"/memory/{target}/forget", stranger)
    assert hidden.status == 404
    url = f"{played.url}/api/sessions/{played.session_id}/memory"
    async with http.get(url, headers=auth(stranger)) as response:
        assert response.status == 404
    async with http.post(
        f"{played.url}/sessions/{played.session_id}/memory/{target}/forget", allow_redirects=False
    ) as response:
        assert response.status == 401  # no token at all
    assert await _records(http, played) == before


async def test_admin_edits_and_forgets_a_record(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    before = await _records(http, played)
    old = next(r for r in before.values() if r["tier"] == "micro" and r["lifecycle"] == "active")
    too_long = "x" * (MAX_EDIT_CHARS + 1)
    refused = await post_form(
        http, played, f"/memory/{old['id']}/edit", played.token, text=too_long
    )
    assert refused.status == 303 and "MAX_EDIT_CHARS" in refused.headers["Location"]
    empty = await post_form(http, played, f"/memory/{old['id']}/edit", played.token, text="  ")
    assert empty.status == 303 and "error=" in empty.headers["Location"]
    assert await _records(http, played) == before

    done = await post_form(
        http, played, f"/memory/{old['id']}/edit", played.token, text="Scene revised by hand."
    )
    assert done.status == 303 and "done=" in done.headers["Location"]
    after = await _records(http, played)
    assert after[old["id"]]["lifecycle"] == "deprecated"
    (new,) = [r for r in after.values() if r["text"] == "Scene revised by hand."]
    assert new["lifecycle"] == "active" and new["tier"] == "micro"
    assert {"kind": "updates", "direction": "out", "other": old["id"]} in new["lineage"]

    done = await post_form(http, played, f"/memory/{new['id']}/forget", played.token)
    assert done.status == 303
    assert (await _records(http, played))[new["id"]]["lifecycle"] == "deprecated"
    missing = await post_form(http, played, "/memory/no-such-record/forget", played.token)
    assert missing.status == 303 and "no+memory" in missing.headers["Location"]


async def test_admin_revives_a_dead_job_of_the_realm(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    memory = played.app.service.memory
    assert played.call(memory.repo.list_jobs()), "the played session scheduled no memory job"
    # A job of a branch scope nobody plays, dead-lettered from the start: the scheduler never
    # runs a dead job, so nothing but the page changes it.
    session = played.call(played.app.service.timeline.find_session("console", "harbor"))
    scope = JobScope(
        realm_id=str(session.realm_id),
        session_id=str(session.id),
        scope=MemoryScope.BRANCH,
        scope_id="999999",
    )
    fresh = new_job(JobType.COMPACT, scope.key, due_at=memory.clock.now())
    state = replace(
        fresh, status=JobStatus.DEAD_LETTER, attempts=5, last_error="the model was down"
    )
    assert played.call(memory.repo.save_job(state, expected_revision=None))
    state = played.call(memory.repo.load_job(JobType.COMPACT, scope.key))
    url = f"{played.url}/sessions/{played.session_id}/memory"
    async with http.get(url, headers=auth(played.token)) as response:
        html = await response.text()
    assert "dead_letter" in html and "the model was down" in html and "Revive" in html

    reader = played.issue("read", None)
    refused = await post_form(http, played, "/memory-jobs/revive", reader, job=state.key)
    assert refused.status == 403
    loaded = played.call(memory.repo.load_job(state.job_type, state.scope_key))
    assert loaded.status is JobStatus.DEAD_LETTER

    done = await post_form(http, played, "/memory-jobs/revive", played.token, job=state.key)
    assert done.status == 303 and "revived" in done.headers["Location"]
    loaded = played.call(memory.repo.load_job(state.job_type, state.scope_key))
    assert loaded.status is not JobStatus.DEAD_LETTER
    unknown = await post_form(http, played, "/memory-jobs/revive", played.token, job="nope:x")
    assert unknown.status == 303 and "error=" in unknown.headers["Location"]


async def test_the_listing_search_and_query_are_bounded(
    http: aiohttp.ClientSession, played: PlayedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from adapters.web import memory_rows, pages_memory

    monkeypatch.setattr(memory_rows, "MAX_PAGE_RECORDS", 2)
    assert len(await _records(http, played)) == 2
    monkeypatch.setattr(memory_rows, "SEARCH_HITS", 1)
    assert len(await _records(http, played, q="lighthouse night")) == 1
    monkeypatch.setattr(pages_memory, "MAX_QUERY_CHARS", 5)
    url = f"{played.url}/sessions/{played.session_id}/memory"
    async with http.get(url, params={"q": "lighthouse"}, headers=auth(played.token)) as r:
        html = await r.text()
    assert 'value="light"' in html and "lighthouse</" not in html.split("Records matching")[1][:40]
