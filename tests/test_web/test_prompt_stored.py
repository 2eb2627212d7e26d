"""A past floor in the prompt inspector is shown as it was assembled: each generated page keeps
its itemization (stored with its commit), so changing the world book afterwards does not
change what floor 3's page shows; a page without one (older than itemizations) falls back to
today's rebuild, labelled so. The bound on an itemization cuts texts, never structure."""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from sqlalchemy import delete

from adapters.storage.itemization_models import ITEMIZATION
from engine.prompt.itemize import CUT_MARK, MAX_ITEMIZATION_CHARS, MIN_KEPT_CHARS, bounded
from tests.test_web.played import SESSION, WORLD_BOOK, PlayedServer

pytestmark = pytest.mark.timeout(120)
TIMEOUT = aiohttp.ClientTimeout(total=30)
OLD_LORE = "The lighthouse has a red lamp that never goes out."
NEW_LORE = "The lighthouse was painted blue last spring."


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
        yield session


async def _prompt(
    http: aiohttp.ClientSession, played: PlayedServer, **params: str
) -> dict[str, Any]:
    url = f"{played.url}/api/sessions/{played.session_id}/prompt"
    headers = {"Authorization": f"Bearer {played.token}"}
    async with http.get(url, headers=headers, params=params) as response:
        data: dict[str, Any] = await response.json()
        assert response.status == 200, data
        return data


async def _page_html(http: aiohttp.ClientSession, played: PlayedServer, floor: str) -> str:
    url = f"{played.url}/sessions/{played.session_id}/prompt"
    headers = {"Authorization": f"Bearer {played.token}"}
    async with http.get(url, headers=headers, params={"floor": floor}) as response:
        return await response.text()


async def _replace_world_book(http: aiohttp.ClientSession, played: PlayedServer) -> None:
    book = copy.deepcopy(WORLD_BOOK)
    book["entries"]["0"]["content"] = NEW_LORE
    form = aiohttp.FormData()
    form.add_field("kind", "worldbook")
    form.add_field(
        "file", json.dumps(book).encode(), filename="harbor.json", content_type="application/json"
    )
    url = f"{played.url}/sessions/{played.session_id}/assets"
    headers = {"Authorization": f"Bearer {played.token}"}
    async with http.post(url, data=form, headers=headers, allow_redirects=False) as response:
        await response.read()
        assert response.status == 303, response.headers.get("Location")
        assert "error" not in response.headers["Location"]


async def _drop_itemization(played: PlayedServer, floor: int) -> None:
    service = played.app.service
    session = await service.timeline.find_session("console", SESSION)
    branch = await service.timeline.branch(session.id, "main")
    view = await service.history_service.floor_view(branch.id, floor)
    async with service.storage.unit_of_work() as uow:
        await uow.connection.execute(
            delete(ITEMIZATION).where(ITEMIZATION.c.page_id == view.active.id)
        )


def _world(data: dict[str, Any]) -> list[tuple[str, str]]:
    return [(w["fired_by"], w["content"]) for w in data["world_info"]]


async def test_a_past_floor_shows_its_stored_itemization_after_the_book_changed(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    before = await _prompt(http, played, floor="3")
    assert before["source"] == "stored" and before["page"] == 1
    assert _world(before) == [("lighthouse", OLD_LORE)]
    assert all(isinstance(m["tokens"], int) and m["tokens"] > 0 for m in before["messages"])
    assert before["messages"][-1]["content"] == "We walk to the lighthouse, night 2."
    assert 'data-source="stored"' in await _page_html(http, played, "3")

    await _replace_world_book(http, played)
    assert _world(await _prompt(http, played)) == [("lighthouse", NEW_LORE)]  # the next reply
    after = await _prompt(http, played, floor="3")
    assert after["source"] == "stored" and _world(after) == [("lighthouse", OLD_LORE)]

    # Without its itemization (a page older than them) the floor is rebuilt from today's
    # assets, and the page says so.
    played.call(_drop_itemization(played, 3))
    rebuilt = await _prompt(http, played, floor="3")
    assert rebuilt["source"] == "rebuilt" and _world(rebuilt) == [("lighthouse", NEW_LORE)]
    html = await _page_html(http, played, "3")
    assert 'data-source="rebuilt"' in html and "no stored itemization" in html


def test_an_itemization_over_the_bound_cuts_texts_and_keeps_the_structure() -> None:
    long = "word " * (MAX_ITEMIZATION_CHARS // 2)
    data = {
        "version": 1,
        "messages": [
            {"role": "system", "content": long, "sources": [{"kind": "card"}], "tokens": 9000},
            {"role": "user", "content": "short", "sources": [{"kind": "history"}], "tokens": 1},
        ]
        * 3,
        "world_info": [{"key": "b.1", "fired_by": "gate", "content": long}],
        "budget": {"total_tokens": 27003},
        "warnings": [],
    }
    cut = bounded(copy.deepcopy(data))
    assert len(json.dumps(cut, ensure_ascii=False)) <= MAX_ITEMIZATION_CHARS
    assert cut["truncated"] is True
    assert len(cut["messages"]) == 6 and cut["world_info"][0]["fired_by"] == "gate"
    assert cut["messages"][1]["content"] == "short" and cut["messages"][0]["tokens"] == 9000
    assert cut["messages"][0]["content"].endswith(CUT_MARK)
    assert len(cut["messages"][0]["content"]) >= MIN_KEPT_CHARS
    small: dict[str, Any] = {"messages": [], "world_info": [], "budget": {}, "warnings": []}
    assert bounded(copy.deepcopy(small)) == small  # under the bound: untouched


def test_an_itemization_keeps_history_and_entry_texts_short() -> None:
    from engine.formats.worldbook import WorldEntry
    from engine.prompt.ir import BudgetReport, IRMessage, PromptIR, Section, Source
    from engine.prompt.itemize import HISTORY_LINE_CHARS, WORLD_ENTRY_CHARS, itemization_of
    from engine.prompt.wi_output import build_result
    from engine.prompt.wi_timed import TimedState

    card = "c" * (HISTORY_LINE_CHARS * 2)
    said = "h" * (HISTORY_LINE_CHARS * 2)
    lore = "w" * (WORLD_ENTRY_CHARS * 2)
    ir = PromptIR(
        mode="compat_plus",
        messages=(
            IRMessage(
                role="system",
                content=card,
                sections=(Section(source=Source(kind="card", ref="description"), text=card),),
                tokens=120,
            ),
            IRMessage(
                role="user",
                content=said,
                sections=(Section(source=Source(kind="history", ref="3"), text=said),),
                tokens=110,
            ),
        ),
        budget=BudgetReport(
            max_context=4096, response_tokens=300, priming_tokens=3, available=3793
        ),
    )
    world = build_result(
        [("b.1", "b", WorldEntry(uid=1, keys=("gate",), content=lore), lore)],
        regex=lambda text, _depth: text,
        timed_state=TimedState(),
        budget=100,
        used_tokens=10,
        overflowed=False,
        passes=1,
        fired={"b.1": "gate"},
    )
    data = itemization_of(ir, world)
    card_item, said_item = data["messages"]
    assert card_item["content"] == card and card_item["tokens"] == 120  # whole: not history
    assert said_item["content"] == said[:HISTORY_LINE_CHARS] + CUT_MARK
    assert said_item["tokens"] == 110  # the count is of what was sent
    (entry,) = data["world_info"]
    assert entry["fired_by"] == "gate"
    assert entry["content"] == lore[:WORLD_ENTRY_CHARS] + CUT_MARK
    assert "truncated" not in data
