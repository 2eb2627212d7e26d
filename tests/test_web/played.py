"""A session played through the console, served by the web page, for the browser tests.

:class:`PlayedServer` runs, in a thread of its own with its own event loop (Selenium's calls
block, so the server cannot share the test's loop): the loopback fake model server, the whole
application as ``tavernbot run`` composes it (:class:`bot.app.Application`: engine, memory
service, event bus), a console front end (``open_console``) that plays a session, and the web
page (``build_web_app``) on an ephemeral loopback port. The test thread drives the console
through :meth:`PlayedServer.console` meanwhile, so a reply made while a page is open arrives
through the same engine events a live bot would emit.

The story: the card Mira and a world book whose entry ``Lighthouse`` fires on "lighthouse";
seven turns whose replies carry a ``<summary>`` (micro summaries), the oldest compacted into a
macro summary (lineage); a page variable ``mood`` set to ``calm`` on page 1 of the last floor,
a second page of that floor written (``/regen``) and ``mood`` set to ``stormy`` there; a branch
``main-2`` forked after floor 2.
"""

from __future__ import annotations

import asyncio
import io
import json
import threading
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tests.fakes.openai_server import QUIET_MEMORY_AGENT, FakeOpenAIServer, FakeReply
from tests.test_e2e.console import chat_env

SESSION: Final = "harbor"
TURNS: Final = 7
"""Turns played with a summary each: 4 newest micros are kept, the 3 oldest are compacted."""
START_S: Final = 90.0
"""Longest the thread may take to play the story and start serving."""
CALL_S: Final = 60.0
"""Longest one console line may take (the fake model answers at once)."""
STOP_S: Final = 30.0
CARD: Final = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Mira",
        "description": "Mira keeps the harbor's lighthouse.",
        "personality": "calm",
        "first_mes": "The lamp is lit, {{user}}.",
        "mes_example": "",
        "scenario": "",
    },
}
WORLD_BOOK: Final = {
    "entries": {
        "0": {
            "uid": 0,
            "key": ["lighthouse"],
            "keysecondary": [],
            "comment": "Lighthouse",
            "content": "The lighthouse has a red lamp that never goes out.",
            "constant": False,
            "selective": False,
            "order": 100,
            "position": 0,
            "disable": False,
        }
    }
}


def _system(body: Mapping[str, Any]) -> str:
    for message in body.get("messages", ()):
        if message.get("role") == "system":
            return str(message.get("content") or "")
    return ""


def _last_user(body: Mapping[str, Any]) -> str:
    for message in reversed(body.get("messages", ())):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


@dataclass
class Story:
    """The fake model's answers: the narrator's replies (each with a numbered summary) and
    the compaction's summary."""

    replies: int = 0
    compactions: int = 0

    def __call__(self, body: Mapping[str, Any]) -> FakeReply:
        from engine.memory.compaction import COMPACTION_SYSTEM_PROMPT

        if _system(body).startswith(COMPACTION_SYSTEM_PROMPT[:60]):
            self.compactions += 1
            return FakeReply(text="Ann and Mira climbed the lighthouse over three nights.")
        self.replies += 1
        n = self.replies
        said = _last_user(body)[-40:]
        return FakeReply(
            text=f"Mira answers reply {n} to “{said}”. <summary>Scene {n}: Ann spoke of "
            f"the lighthouse, night {n}.</summary>"
        )


@dataclass
class PlayedServer:
    """The played session, the application and the web page, in one background thread."""

    directory: Path
    url: str = ""
    token: str = ""
    session_id: int = 0
    story: Story = field(default_factory=Story)
    _loop: asyncio.AbstractEventLoop | None = None
    _thread: threading.Thread | None = None
    _ready: threading.Event = field(default_factory=threading.Event)
    _stop: asyncio.Event | None = None
    _error: BaseException | None = None
    front: Any = None
    out: io.StringIO = field(default_factory=io.StringIO)
    app: Any = None
    web: Any = None
    """The aiohttp application of the page."""

    def start(self) -> PlayedServer:
        """Play the story and serve the page (fails after START_S)."""
        self._thread = threading.Thread(target=self._run, name="played-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(START_S):
            raise AssertionError(f"the played server did not start within {START_S}s")
        if self._error is not None:
            raise AssertionError(f"the played server failed: {self._error!r}") from self._error
        return self

    def call(self, coro: Coroutine[Any, Any, Any], timeout: float = CALL_S) -> Any:
        """Run ``coro`` on the server's loop and wait (at most ``timeout``) for its result."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def console(self, line: str) -> None:
        """Type ``line`` into the session's console (a message or a command)."""
        assert self.call(self.front.handle_line(line))

    def issue(self, kind: str, realm: str | None) -> str:
        """A new token of ``kind`` (``read`` or ``admin``) for ``realm`` (``platform:key``,
        None: every realm)."""
        from adapters.storage.web_repo import SqlWebTokens
        from adapters.web.auth import check_kind, issue_token

        store = SqlWebTokens(self.app.storage)
        return str(
            self.call(
                issue_token(
                    store, kind=check_kind(kind), realm=realm, label=f"t-{kind}-{id(object())}"
                )
            )
        )

    def stop(self) -> None:
        """Stop serving and close the application (bounded by STOP_S)."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(STOP_S)
            if self._thread.is_alive():
                raise AssertionError(f"the played server did not stop within {STOP_S}s")

    # ------------------------------------------------------------------ the thread

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to the test thread by start()
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        from adapters.storage.web_repo import SqlWebTokens
        from adapters.web.app import WebServer, build_web_app
        from adapters.web.auth import issue_token
        from adapters.web.context import WebOptions
        from bot.app import Application, open_console
        from bot.config import load_settings

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with FakeOpenAIServer(
            responder=self.story,
            memory_agent=QUIET_MEMORY_AGENT,
            max_requests=200,
            lifetime_s=600.0,
        ) as fake:
            env = chat_env(self.directory / "web.db", fake.base_url)
            async with Application(load_settings(environ=env)) as app:
                self.app = app
                self.front = await open_console(
                    app,
                    session=SESSION,
                    user="Ann",
                    jsonl=True,
                    out=self.out,
                    files={
                        "card": [("mira.json", json.dumps(CARD).encode())],
                        "worldbook": [("harbor.json", json.dumps(WORLD_BOOK).encode())],
                    },
                    options={"mode": "compat_plus", "memory": "on"},
                )
                await self._play(app)
                assert app.storage is not None  # opened by the application's entry
                options = WebOptions(host="127.0.0.1", port=0)
                self.web = build_web_app(app.service, app.storage, options)
                server = WebServer(self.web, options)
                await server.start()
                try:
                    store = SqlWebTokens(app.storage)
                    self.token = await issue_token(store, kind="admin", realm=None, label="test")
                    self.url = server.url.rstrip("/")
                    found = await app.service.timeline.find_session("console", SESSION)
                    assert found is not None
                    self.session_id = found.id
                    self._ready.set()
                    await self._stop.wait()
                finally:
                    await server.close()

    async def _play(self, app: Any) -> None:
        from bot.scheduler import timeline_floors

        for n in range(1, TURNS + 1):
            assert await self.front.handle_line(f"We walk to the lighthouse, night {n}.")
        await app.service.parts.memory.drain()
        # The last floor: a page variable on page 1, a swipe to page 2, another value there.
        for line in ("/setvar mood calm page", "/regen", "/setvar mood stormy page"):
            assert await self.front.handle_line(line)
        # The three oldest micro summaries fold into a macro (the newest four are kept).
        memory = app.service.memory
        timeline = app.service.timeline
        session = await timeline.find_session("console", SESSION)
        assert session is not None
        floors = timeline_floors(timeline)
        compacted = 0
        for scope in await memory.summary_scopes(str(session.realm_id), str(session.id)):
            head, barriers = await floors(scope)
            plans = await memory.compact_now(
                scope, head_floor=head, barrier_floors=barriers, force=True
            )
            compacted += sum(len(plan.new_records) for plan in plans)
        assert compacted, "the story's micro summaries were not compacted"
        # A fork after floor 2, then back to main, where the test plays on.
        for line in ("/fork 2", "/switch main"):
            assert await self.front.handle_line(line)
