"""The timeline of a session played through the console: the branch tree with the fork, the
swiped floor with both pages, the tool-call records, the model and the usage."""

from __future__ import annotations

import pytest

from tests.test_web.served import Served, served  # noqa: F401

pytestmark = pytest.mark.timeout(60)


async def test_timeline_json_shows_fork_and_swiped_page(served: Served) -> None:  # noqa: F811
    head = served.bearer(served.reader)
    url = f"/api/sessions/{served.session_id}/timeline"
    main = await (await served.client.get(url, headers=head)).json()
    branches = {b["name"]: b for b in main["branches"]}
    assert set(branches) == {"main", "main-1"}
    assert branches["main-1"]["parent"] == "main" and branches["main-1"]["fork_floor"] == 1
    assert branches["main-1"]["depth"] == 1
    first = main["floors"][0]
    assert first["seq"] == 1 and first["swipe"] == "2/2"
    texts = [p["text"] for p in first["pages"]]
    assert texts == ["She smiles.", "She frowns."]
    assert [p["active"] for p in first["pages"]] == [False, True]
    tools = first["pages"][0]["tool_records"]
    assert tools[0]["name"] == "set_variable" and "happy" in tools[0]["arguments"]
    assert "fake-model" in " ".join(first["pages"][0]["models"])
    assert first["pages"][0]["usage"]["narrator"]["completion_tokens"] > 0

    forked = await (await served.client.get(url, params={"branch": "main-1"}, headers=head)).json()
    floors = [(f["seq"], f["branch"]) for f in forked["floors"]]
    assert floors == [(1, "main"), (2, "main-1")]
    assert forked["floors"][1]["pages"][0]["text"] == "She breathes."


async def test_timeline_page_renders_tree_floors_and_pages(served: Served) -> None:  # noqa: F811
    await served.login(served.reader)
    page = await served.client.get(
        f"/sessions/{served.session_id}/timeline", params={"floor": "1"}
    )
    assert page.status == 200
    html = await page.text()
    assert 'data-branch="main-1"' in html and "forks main after floor 1" in html
    assert "page 2/2" in html
    assert "She smiles." in html and "She frowns." in html
    assert "set_variable" in html and "fake-model" in html


async def test_unknown_branch_and_session_are_404(served: Served) -> None:  # noqa: F811
    head = served.bearer(served.admin)
    base = f"/api/sessions/{served.session_id}/timeline"
    assert (await served.client.get(base, params={"branch": "nope"}, headers=head)).status == 404
    assert (await served.client.get("/api/sessions/999/timeline", headers=head)).status == 404
    assert (await served.client.get("/api/sessions/x/timeline", headers=head)).status == 404


async def test_sessions_list_searches_and_filters(served: Served) -> None:  # noqa: F811
    head = served.bearer(served.admin)
    everything = await (await served.client.get("/api/sessions", headers=head)).json()
    places = {s["place"] for s in everything["sessions"]}
    assert places == {"story", "other-story"}
    story = next(s for s in everything["sessions"] if s["place"] == "story")
    assert story["settings"]["tools"] == "on" and story["branches"] == 2
    assert story["last_activity"] is not None
    found = await (
        await served.client.get("/api/sessions", params={"q": "OTHER"}, headers=head)
    ).json()
    assert [s["place"] for s in found["sessions"]] == ["other-story"]
    none = await (
        await served.client.get("/api/sessions", params={"platform": "discord"}, headers=head)
    ).json()
    assert none["sessions"] == []
    await served.login(served.admin)
    html = await (await served.client.get("/", params={"q": "story"})).text()
    assert "/sessions/" in html and "tools=on" in html
