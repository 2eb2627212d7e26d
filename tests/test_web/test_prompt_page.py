"""The prompt inspector: the dry run of the next reply with its sources, the world-info entry
that fired and the key that fired it, the memory block and the budget; and the key finding on
its own (constant entries, case and whole-word settings, no key in the shown chat)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from adapters.web.prompt_view import DEFAULT_PROBE, MAX_PROBE_CHARS, fired_by, prompt_view
from engine.formats.worldbook import WorldBook, WorldEntry
from engine.prompt.wi_sources import BookSource
from tests.test_web.played import PlayedServer

pytestmark = pytest.mark.timeout(120)
TIMEOUT = aiohttp.ClientTimeout(total=30)


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(timeout=TIMEOUT) as session:
        yield session


def test_the_key_that_fired_follows_the_entry_settings() -> None:
    assert fired_by(WorldEntry(uid=1, keys=("moon",), constant=True), "") == "constant"
    assert fired_by(WorldEntry(uid=1, keys=("Tower", "lamp")), "the LAMP glows") == "lamp"
    strict = WorldEntry(uid=1, keys=("Lamp",), case_sensitive=True)
    assert fired_by(strict, "the lamp glows") == ""
    assert fired_by(strict, "the Lamp glows") == "Lamp"
    whole = WorldEntry(uid=1, keys=("lamp",), match_whole_words=True)
    assert fired_by(whole, "lamplight") == ""
    assert fired_by(whole, "a lamp.") == "lamp"
    assert fired_by(WorldEntry(uid=1, keys=("/l[a]mp/i",)), "LAMP") == "/l[a]mp/i"
    assert fired_by(None, "anything") == ""


def test_the_view_sorts_sources_world_and_memory() -> None:
    book = WorldBook(name="b", entries=(WorldEntry(uid=3, keys=("gate",)),))
    data = {
        "messages": [
            {
                "role": "system",
                "content": "[Memory] x",
                "sources": [{"kind": "memory", "ref": "m1"}],
            },
            {
                "role": "system",
                "content": "Gate lore",
                "sources": [{"kind": "world", "ref": "b.3"}],
            },
            {
                "role": "user",
                "content": "Open the gate",
                "sources": [{"kind": "history", "ref": "2"}],
            },
        ],
        "world_info": [{"key": "b.3", "book": "b", "uid": 3, "content": "Gate lore"}],
        "budget": {
            "total_tokens": 9,
            "available": 90,
            "max_context": 100,
            "response_tokens": 10,
            "history_tokens": 3,
            "history_messages": 1,
            "world_info_tokens": 2,
            "world_info_budget": 20,
        },
        "warnings": ["w1"],
    }
    view = prompt_view(data, [BookSource(book=book, kind="chat")])
    assert [m.sources for m in view.memory] == [("memory:m1",)]
    assert view.world[0].fired_by == "gate"
    assert view.messages[1].is_world and not view.messages[1].is_memory
    assert view.warnings == ("w1",) and "9 of 90 tokens" in view.text
    assert "prompt 9 of 90 tokens" in view.budget_text


async def test_the_inspector_shows_the_entry_that_fired_and_the_memory_block(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    headers = {"Authorization": f"Bearer {played.token}"}
    url = f"{played.url}/api/sessions/{played.session_id}/prompt"
    async with http.get(url, headers=headers) as response:
        data = await response.json()
    assert response.status == 200, data
    assert data["message"] == DEFAULT_PROBE
    assert [(w["key"], w["fired_by"]) for w in data["world_info"]] == [("harbor.0", "lighthouse")]
    memory = [m for m in data["messages"] if any(s.startswith("memory:") for s in m["sources"])]
    assert len(memory) == 1 and "[Macro Summary]" in memory[0]["content"]
    assert data["messages"][-1]["content"] == DEFAULT_PROBE
    assert data["budget"]["total_tokens"] <= data["budget"]["available"]

    async with http.get(
        url, headers=headers, params={"message": "x" * (MAX_PROBE_CHARS + 50)}
    ) as r:
        assert len((await r.json())["message"]) == MAX_PROBE_CHARS
    async with http.get(url, headers=headers, params={"branch": "nowhere"}) as r:
        error = (await r.json())["error"]
    assert r.status == 422 and "nowhere" in error and "\n" not in error

    page = f"{played.url}/sessions/{played.session_id}/prompt"
    async with http.get(page, headers=headers, params={"message": "Hello"}) as r:
        html = await r.text()
    assert 'data-fired-by="lighthouse"' in html and "data-copy" in html and "Hello" in html


async def test_the_inspector_needs_a_token_of_the_realm(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    url = f"{played.url}/api/sessions/{played.session_id}/prompt"
    async with http.get(url) as response:
        assert response.status == 401
    stranger = played.issue("read", "telegram:elsewhere")
    async with http.get(url, headers={"Authorization": f"Bearer {stranger}"}) as response:
        assert response.status == 404


async def test_a_past_floor_is_assembled_as_it_was(
    http: aiohttp.ClientSession, played: PlayedServer
) -> None:
    headers = {"Authorization": f"Bearer {played.token}"}
    url = f"{played.url}/api/sessions/{played.session_id}/prompt"
    async with http.get(url, headers=headers, params={"floor": "3"}) as response:
        data = await response.json()
    assert response.status == 200, data
    history = [
        m["content"]
        for m in data["messages"]
        if any(s.startswith("history:") for s in m["sources"])
    ]
    # Floor 3's own input last, nothing said after it.
    assert history[-1] == "We walk to the lighthouse, night 2."
    assert not any("night 3" in text for text in history)
    assert [w["fired_by"] for w in data["world_info"]] == ["lighthouse"]
    async with http.get(url, headers=headers, params={"floor": "99"}) as response:
        assert response.status == 422 and "99" in (await response.json())["error"]
    async with http.get(url, headers=headers, params={"floor": "x"}) as response:
        assert response.status == 400
    page = f"{played.url}/sessions/{played.session_id}/prompt"
    async with http.get(page, headers=headers, params={"floor": "3"}) as response:
        assert 'data-assembled="3"' in await response.text()
