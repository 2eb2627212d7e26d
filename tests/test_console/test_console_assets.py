"""The console's asset commands on the real engine: ``/persona`` (kept per session, the
``{{user}}`` of the next turns), ``/character``, ``/preset`` and ``/worldbook`` picking what
the realm holds, and ``/setvar``/``/vars`` on the floor and page in play."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.console.frontend import ConsoleFrontend
from adapters.llm import ChatModelPool
from adapters.storage import open_storage
from engine.turns.api import SessionKey
from engine.turns.profiles import LLMProfile, NoSecretCipher
from engine.turns.service import TavernService
from tests.conftest import ST_FIXTURES
from tests.fakes.openai_server import QUIET_MEMORY_AGENT, FakeOpenAIServer

pytestmark = pytest.mark.timeout(90)
KEY = SessionKey(platform="console", realm="local", key="assets")
OTHER = SessionKey(platform="console", realm="local", key="elsewhere")
CARD = {"name": "Mira", "description": "Mira greets {{user}} by name.", "first_mes": "Hi."}


class Console:
    """A ``--jsonl`` console on one session, its output read back row by row."""

    def __init__(self, service: TavernService, key: SessionKey = KEY) -> None:
        self.out = io.StringIO()
        self.front = ConsoleFrontend(
            service=service, key=key, user="Ann", out=self.out, jsonl=True
        )
        self._read = 0

    async def __call__(self, *lines: str) -> list[dict[str, Any]]:
        for line in lines:
            assert await self.front.handle_line(line)
        rows = [json.loads(x) for x in self.out.getvalue().splitlines()]
        new, self._read = rows[self._read :], len(rows)
        return new


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
async def remote(tmp_path: Path) -> AsyncIterator[tuple[TavernService, FakeOpenAIServer]]:
    """The engine on the fake model server (the prompts it receives are recorded)."""
    async with FakeOpenAIServer(
        max_requests=30, lifetime_s=80.0, memory_agent=QUIET_MEMORY_AGENT
    ) as fake:
        storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path}/assets.db")
        pool = ChatModelPool()
        profile = LLMProfile(
            id="environment", provider="openai", base_url=fake.base_url, model="m", max_retries=0
        )
        service = TavernService(
            storage,
            model_for=lambda p: pool.for_profile(p, NoSecretCipher(), {}),
            default_profile=profile,
        )
        await service.start()
        try:
            yield service, fake
        finally:
            await service.aclose()
            await pool.aclose()
            await storage.close()


async def test_persona_names_the_user_of_the_next_turns_in_this_session_only(
    tmp_path: Path, remote: tuple[TavernService, FakeOpenAIServer]
) -> None:
    service, fake = remote
    await service.open_session(KEY)
    await service.open_session(OTHER)
    card = write_json(tmp_path / "mira.json", CARD)
    console = Console(service)
    assert (await console(f"/import {card}"))[0]["message"] == "imported card 'Mira'"
    shown = (await console("/persona"))[0]
    assert shown["message"].startswith("you play as Ann (no persona")
    set_ = (await console("/persona Bram a smith who can't sit still"))[0]
    assert set_["persona"] == {"name": "Bram", "description": "a smith who can't sit still"}
    assert (await console("/persona"))[0]["message"] == (
        "you play as Bram: a smith who can't sit still"
    )
    await console("hello")
    prompt = json.dumps(fake.chat_requests[-1].messages)
    assert "Mira greets Bram by name." in prompt
    assert "a smith who can't sit still" in prompt
    # Another console session of the same realm keeps its own (no) persona.
    other = Console(service, OTHER)
    assert (await other("/persona"))[0]["persona"] is None
    await other(f"/import {card}", "hi there")
    assert "Mira greets Ann by name." in json.dumps(fake.chat_requests[-1].messages)
    # /persona off drops it: Ann again from the next turn; a second off says there is none.
    dropped = await console("/persona off", "/persona off", "again")
    assert dropped[0]["message"] == "persona dropped: you play as Ann again"
    assert dropped[1] == {"type": "error", "message": "this session has no persona to drop"}
    assert "Mira greets Ann by name." in json.dumps(fake.chat_requests[-1].messages)


async def test_character_preset_and_worldbook_pick_what_the_realm_holds(
    tmp_path: Path, offline_engine: TavernService
) -> None:
    service = offline_engine
    await service.open_session(KEY)
    for name in ("Mira", "Tobin"):
        data = json.dumps({**CARD, "name": name}).encode()
        await service.import_asset(KEY, "card", f"{name}.json", data, bind=False)
    preset = (ST_FIXTURES / "preset_cc_ST_Default.json").read_bytes()
    await service.import_asset(KEY, "preset", "Default.json", preset, bind=False)
    book = (ST_FIXTURES / "worldinfo_Eldoria.json").read_bytes()
    await service.import_asset(KEY, "worldbook", "Eldoria.json", book, bind=False)
    console = Console(service)
    rows = await console("/character", "/preset", "/worldbook")
    assert rows[0]["items"] == ["Mira", "Tobin"] and rows[0]["bound"] == []
    assert rows[1]["message"] == "presets: Default (/preset NAME to pick one)"
    assert rows[2]["message"] == "world books: Eldoria (/worldbook add NAME to pick one)"

    rows = await console(
        "/character tobin", "/character", "/preset Default", "/worldbook add Eldoria"
    )
    assert rows[0]["message"] == "now playing Tobin"
    assert rows[1]["message"] == "cards: Mira, Tobin* (/character NAME to pick one)"
    assert rows[2]["message"] == "now using preset Default"
    assert rows[3]["message"] == "attached world book Eldoria; attached: Eldoria"
    info = await service.session_info(KEY)
    assert (info.character, info.preset, info.worldbooks) == ("Tobin", "Default", ("Eldoria",))
    assert (await console("/worldbook"))[0]["message"].startswith("world books: Eldoria*")

    rows = await console(
        "/character Nobody",
        "/preset Nope",
        "/worldbook add Atlantis",
        "/worldbook remove Atlantis",
        "/worldbook drop Eldoria",
        "/worldbook remove Eldoria",
    )
    assert [r["type"] for r in rows] == ["error"] * 5 + ["info"]
    assert rows[0]["message"] == "no card named 'Nobody'; cards: Mira, Tobin"
    assert rows[1]["message"] == "no preset named 'Nope'; presets: Default"
    assert rows[2]["message"] == "no world book named 'Atlantis'; world books: Eldoria"
    assert rows[3]["message"] == "world book 'Atlantis' is not attached; attached: Eldoria"
    assert rows[4]["message"] == "usage: /worldbook [add NAME | remove NAME]"
    assert rows[5]["message"] == "detached world book Eldoria; attached: none"
    assert (await service.session_info(KEY)).worldbooks == ()


async def test_an_empty_realm_says_how_to_import(offline_engine: TavernService) -> None:
    await offline_engine.open_session(KEY)
    rows = await Console(offline_engine)("/character", "/preset Any")
    assert rows[0]["message"].startswith("no cards in this realm yet; import one with /import")
    assert rows[1]["message"].startswith("no preset named 'Any'; no presets yet; import one")


async def test_setvar_floor_and_page_show_at_once_and_vars_merges_global(
    offline_engine: TavernService,
) -> None:
    service = offline_engine
    await service.open_session(KEY)
    console = Console(service)
    rows = await console("/setvar lamp on floor", "/setvar mark x page")
    assert [r["type"] for r in rows] == ["error", "error"]
    assert "branch 'main' has no floor yet" in rows[0]["message"]
    rows = await console(
        "hello",
        "/setvar lamp on floor",
        "/setvar mark x page",
        "/setvar realm yes global",
        "/setvar lamp chat-value chat",
        "/vars floor",
        "/vars page",
        "/vars",
    )
    shown = [r for r in rows if r["type"] == "vars"]
    assert shown[0]["vars"] == {"lamp": "on"}
    assert shown[1]["vars"] == {"mark": "x"}
    # The merged view: every scope, the narrowest winning (floor over chat), global included.
    assert shown[2]["vars"] == {"lamp": "on", "mark": "x", "realm": "yes"}
    # The next floor starts its own floor and page scopes.
    rows = await console("again", "/vars")
    assert rows[-1]["vars"] == {"lamp": "chat-value", "realm": "yes"}
