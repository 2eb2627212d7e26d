"""The timeline of a session played through the console: the branch tree with the fork, the
swiped floor with both pages, the tool-call records, the model and the usage."""

from __future__ import annotations

import re

import pytest

from engine.errors import EngineError
from engine.turns.api import UserLine
from engine.turns.values import Speaker
from tests.fakes.openai_server import FakeError, FakeReply
from tests.test_web.served import PLAYED, Served, served  # noqa: F401

pytestmark = pytest.mark.timeout(60)
ANN = Speaker(id="u1", name="Ann")


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


async def test_floors_show_failed_and_hidden_marks_and_link_to_their_prompt(
    served: Served,  # noqa: F811
) -> None:
    served.fake.script(FakeReply(text="She nods."), FakeError(status=500))
    await served.service.respond(PLAYED, "main", [UserLine(speaker=ANN, text="nod")])
    await served.service.hide_floor(PLAYED, "main", 2)
    with pytest.raises(EngineError):
        await served.service.respond(PLAYED, "main", [UserLine(speaker=ANN, text="again")])
    head = served.bearer(served.reader)
    url = f"/api/sessions/{served.session_id}/timeline"
    floors = {
        f["seq"]: f for f in (await (await served.client.get(url, headers=head)).json())["floors"]
    }
    assert floors[2]["hidden"] and not floors[2]["failed"]
    assert floors[3]["failed"] and floors[3]["swipe"] == "—"

    await served.login(served.reader)
    html = await (await served.client.get(f"/sessions/{served.session_id}/timeline")).text()
    items = {
        int(m.group(1)): m.group(0)
        for m in re.finditer(r'<li class="[^"]*" data-floor="(\d+)">.*?</li>', html, re.S)
    }
    assert "page 2/2" in items[1] and 'data-prompt-floor="1"' in items[1]
    assert "hidden-floor" in items[2] and ">hidden</span>" in items[2]
    assert " failed" in items[3] and ">failed</span>" in items[3]
    assert "data-prompt-floor" not in items[3]  # a failed floor has no prompt to show
    opened = await (
        await served.client.get(f"/sessions/{served.session_id}/timeline", params={"floor": "1"})
    ).text()
    assert f"/sessions/{served.session_id}/prompt?branch=main&amp;floor=1&amp;page=1" in opened
    # The link leads to page 1's prompt as it was assembled (page 2 is the active one).
    prompt = f"/api/sessions/{served.session_id}/prompt"
    first = await (
        await served.client.get(prompt, params={"floor": "1", "page": "1"}, headers=head)
    ).json()
    assert first["source"] == "stored" and first["page"] == 1
    active = await (await served.client.get(prompt, params={"floor": "1"}, headers=head)).json()
    assert active["page"] == 2
    missing = await served.client.get(prompt, params={"floor": "1", "page": "9"}, headers=head)
    assert missing.status == 422 and "no page 9" in (await missing.json())["error"]
