"""The web page over a real engine for the tests without a browser: a session played through
the console against the fake OpenAI server (a tool writes ``mood`` = ``happy`` on page 1 and
``grim`` on page 2 of floor 1, then a fork after floor 1 plays floor 2 on ``main-1``), and an
aiohttp test client of the web application with tokens of each kind."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from adapters.console.frontend import ConsoleFrontend
from adapters.llm import ChatModelPool
from adapters.storage import SqlStorage, open_storage
from adapters.storage.web_repo import SqlWebTokens
from adapters.web.app import build_web_app
from adapters.web.auth import CSRF_COOKIE, issue_token
from adapters.web.context import WebOptions
from engine.turns.api import SessionKey
from engine.turns.profiles import LLMProfile, NoSecretCipher
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeToolCall

PLAYED = SessionKey(platform="console", realm="local", key="story")
OTHER = SessionKey(platform="console", realm="elsewhere", key="other-story")


def set_mood(value: str) -> FakeReply:
    """A model turn calling the ``set_variable`` tool."""
    args = json.dumps({"name": "mood", "value": value})
    return FakeReply(tool_calls=[FakeToolCall(name="set_variable", arguments=args)])


async def _lines(*texts: str) -> AsyncIterator[str]:
    for text in texts:
        yield text


@dataclass
class Served:
    """The engine, the web client and a token of each kind."""

    service: TavernService
    storage: SqlStorage
    client: TestClient  # type: ignore[type-arg]
    admin: str
    reader: str
    other_realm: str
    session_id: int
    other_id: int
    fake: FakeOpenAIServer
    """The model's fake server (a test scripts further replies or errors on it)."""

    def bearer(self, token: str) -> dict[str, str]:
        """The Authorization header of ``token``."""
        return {"Authorization": f"Bearer {token}"}

    async def login(self, token: str) -> str:
        """Log in through the form (as a browser does); returns the CSRF token."""
        await self.client.get("/login")
        csrf = self.csrf()
        response = await self.client.post(
            "/login", data={"token": token, "csrf": csrf}, allow_redirects=False
        )
        assert response.status == 303, await response.text()
        return csrf

    def csrf(self) -> str:
        """The CSRF cookie the client holds."""
        for cookie in self.client.session.cookie_jar:
            if cookie.key == CSRF_COOKIE:
                return cookie.value
        raise AssertionError("no CSRF cookie was set")


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    """The played session and the web client over it."""
    async with FakeOpenAIServer(max_requests=60, hang_limit_s=10.0, lifetime_s=90.0) as fake:
        async for one in _served(tmp_path, fake):
            yield one


async def _served(tmp_path: Path, fake: FakeOpenAIServer) -> AsyncIterator[Served]:
    storage = await open_storage(f"sqlite+aiosqlite:///{tmp_path}/web.db")
    pool = ChatModelPool()
    profile = LLMProfile(
        id="environment",
        provider="openai",
        base_url=fake.base_url,
        model="fake-model",
        timeout_s=10.0,
        max_retries=0,
    )
    service = TavernService(
        storage,
        model_for=lambda p: pool.for_profile(p, NoSecretCipher(), {}),
        default_profile=profile,
    )
    await service.start()
    client: TestClient | None = None  # type: ignore[type-arg]
    try:
        await service.open_session(PLAYED)
        await service.open_session(OTHER)
        fake.script(
            set_mood("happy"),
            FakeReply(text="She smiles."),
            set_mood("grim"),
            FakeReply(text="She frowns."),
            set_mood("calm"),
            FakeReply(text="She breathes."),
        )
        console = ConsoleFrontend(
            service=service, key=PLAYED, user="Ann", out=io.StringIO(), jsonl=True
        )
        await console.run(_lines("/set tools on", "hi", "/regen", "/fork 1", "breathe"))
        tokens = SqlWebTokens(storage)
        admin = await issue_token(tokens, kind="admin", realm=None, label="test admin")
        reader = await issue_token(tokens, kind="read", realm="console:local", label="reader")
        other = await issue_token(tokens, kind="admin", realm="console:elsewhere", label="o")
        app = build_web_app(service, storage, WebOptions(port=0))
        client = TestClient(TestServer(app, host="127.0.0.1"))
        await client.start_server()
        from adapters.storage.web_repo import SqlSessionDirectory

        listed = {e.key: e.id for e in await SqlSessionDirectory(storage).sessions()}
        yield Served(
            service=service,
            storage=storage,
            client=client,
            admin=admin,
            reader=reader,
            other_realm=other,
            session_id=listed["story"],
            other_id=listed["other-story"],
            fake=fake,
        )
    finally:
        if client is not None:
            await client.close()
        await service.aclose()
        await pool.aclose()
        await storage.close()
