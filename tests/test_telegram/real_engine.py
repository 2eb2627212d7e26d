"""Support for the end-to-end tests on the real engine: real aiogram -> fake Bot API ->
TelegramRunner -> TavernService -> SQLite file -> the real openai client -> fake OpenAI server.

:class:`RealHarness` owns one fake Bot API server, one fake OpenAI server and a database file;
:meth:`RealHarness.boot` opens storage, the model pool and a :class:`TavernService` on that file
and starts a runner; :meth:`RealHarness.restart` closes all of that and boots again on the same
file, as a process restart would. The fake model's default answer is :func:`numbered_reply`
(``Reply <n>: <last user message>``), so every page differs; tests script other answers.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from adapters.llm import ChatModelPool, OfflineChatModel
from adapters.storage import SqlStorage, open_storage
from adapters.telegram.config import TelegramConfig
from adapters.telegram.runner import TelegramRunner
from bot.scheduler import build_memory_service
from engine.ports import ChatModel
from engine.turns.api import MAIN_BRANCH, SessionKey
from engine.turns.options import SessionDefaults
from engine.turns.profiles import LLMProfile, NoSecretCipher
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeResponse, FakeToolCall
from tests.fakes.telegram import FakeTelegramServer
from tests.fakes.telegram.methods import FakeMessage
from tests.test_telegram.conftest import config_for

TEST_LIFETIME_S = 90.0
"""Both fakes stop by themselves after this long."""
MODEL_REQUESTS_MAX = 300
"""The fake OpenAI server refuses requests beyond this many."""
CHUNK_DELAY_S = 0.02
"""The fake model pauses this long between streamed chunks, as a real one does."""
WAIT_S = 20.0
"""How long a test waits for one expected outcome."""
Json = dict[str, Any]


class NumberedReplies:
    """The fake model's default: ``Reply <n>: <last user message>`` (n counts answers), so
    that a regenerated page never repeats the text of the page before it."""

    def __init__(self) -> None:
        self._count = itertools.count(1)

    def __call__(self, body: Mapping[str, Any]) -> FakeResponse:
        text = ""
        for message in reversed(body.get("messages", [])):
            if message.get("role") == "user":
                text = str(message.get("content") or "")
                break
        return FakeReply(
            text=f"Reply {next(self._count)}: {text}",
            chunk_chars=6,
            chunk_delay_s=CHUNK_DELAY_S,
        )


def set_variable(name: str, value: Any, scope: str | None = None) -> FakeReply:
    """A fake-model answer that calls the ``set_variable`` tool."""
    args: Json = {"name": name, "value": value}
    if scope is not None:
        args["scope"] = scope
    return FakeReply(tool_calls=[FakeToolCall(name="set_variable", arguments=json.dumps(args))])


def telegram_key(chat: Json) -> SessionKey:
    """The session key the adapter uses for a chat."""
    return SessionKey(platform="telegram", realm=str(chat["id"]), key=str(chat["id"]))


def button(msg: FakeMessage, text: str) -> str:
    """The callback data of the button labelled ``text`` on a bot message."""
    assert msg.reply_markup is not None, f"message {msg.message_id} has no keyboard"
    for row in msg.reply_markup["inline_keyboard"]:
        for item in row:
            if item["text"] == text:
                return str(item["callback_data"])
    raise AssertionError(f"no {text} button on {msg.reply_markup}")


def counter(msg: FakeMessage) -> str:
    """The ``n/m`` page counter under a reply ("" without a keyboard)."""
    return msg.reply_markup["inline_keyboard"][0][1]["text"] if msg.reply_markup else ""


class RealHarness:
    """The fakes, the database file and the live engine and runner (see the module doc)."""

    def __init__(self, tg: FakeTelegramServer, llm: FakeOpenAIServer, db_path: Path) -> None:
        self.tg = tg
        self.llm = llm
        self.db_url = f"sqlite+aiosqlite:///{db_path}"
        self.storage: SqlStorage | None = None
        self.pool: ChatModelPool | None = None
        self.service: TavernService | None = None
        self.runner: TelegramRunner | None = None
        self.slept: list[float] = []
        self.errors: list[BaseException] = []

    async def _sleep(self, seconds: float) -> None:
        self.slept.append(seconds)  # retries in tests do not wait for real

    def config(self, **overrides: Any) -> TelegramConfig:
        return config_for(self.tg, **overrides)

    async def boot(
        self,
        *,
        offline: bool = False,
        memory: bool = False,
        session_defaults: SessionDefaults | None = None,
        **overrides: Any,
    ) -> TelegramRunner:
        """Open storage, the model pool and the service on the database file; start a runner.

        ``offline``: every slot answers with the offline provider instead of the fake OpenAI
        server; ``memory``: long-term memory is on (as ``tavernbot run`` builds it);
        ``session_defaults``: what new sessions start with (``[session]``; None: the
        defaults)."""
        self.storage = await open_storage(self.db_url)
        self.pool = ChatModelPool()
        pool = self.pool
        profile = LLMProfile(
            id="environment",
            provider="offline" if offline else "openai",
            base_url=None if offline else self.llm.base_url,
            model="offline" if offline else "fake-model",
            timeout_s=10.0,
            max_retries=0,
        )
        quiet = OfflineChatModel(announce=False)

        def model_for(p: LLMProfile) -> ChatModel:
            return quiet if offline else pool.for_profile(p, NoSecretCipher(), {})

        self.service = TavernService(
            self.storage,
            model_for=model_for,
            default_profile=profile,
            memory=(
                build_memory_service(self.storage, model=None, model_name=profile.model)
                if memory
                else None
            ),
            session_defaults=session_defaults,
        )
        await self.service.start()
        self.runner = TelegramRunner(self.service, self.config(**overrides), sleep=self._sleep)
        await self.runner.start()
        return self.runner

    async def shutdown(self) -> None:
        """Stop the runner and close the service, the model pool and storage."""
        if self.runner is not None:
            await self.runner.stop()
            self.errors.extend(self.runner.errors)
            self.runner = None
        if self.service is not None:
            await self.service.aclose()
            self.service = None
        if self.pool is not None:
            await self.pool.aclose()
            self.pool = None
        if self.storage is not None:
            await self.storage.close()
            self.storage = None

    async def restart(self, **overrides: Any) -> TelegramRunner:
        """A process restart: everything closed, then booted again on the same file."""
        await self.shutdown()
        return await self.boot(**overrides)

    @property
    def svc(self) -> TavernService:
        assert self.service is not None, "boot() first"
        return self.service

    # ----------------------------------------------------------------- reading
    def texts(self, chat_id: int, **kw: Any) -> list[str]:
        return [m.text or "" for m in self.tg.bot_messages(chat_id, **kw)]

    async def wait_text(
        self, chat_id: int, predicate: Callable[[str], bool], *, wait_s: float = WAIT_S, **kw: Any
    ) -> FakeMessage:
        """Wait until a bot message in the chat satisfies ``predicate``; return the newest."""

        def found() -> FakeMessage | None:
            hits = [m for m in self.tg.bot_messages(chat_id, **kw) if predicate(m.text or "")]
            return hits[-1] if hits else None

        await self.tg.wait_until(lambda: found() is not None, wait_s=wait_s)
        message = found()
        assert message is not None
        return message

    async def ask(self, chat: Json, sender: Json, command: str, starts: str, **kw: Any) -> str:
        """Send a command and return the text of the bot's answer that starts with ``starts``
        and came after it."""
        sent = await self.tg.send_text(chat, sender, command, **kw)
        after = int(sent["message_id"])

        def found() -> FakeMessage | None:
            for m in self.tg.bot_messages(int(chat["id"])):
                if m.message_id > after and (m.text or "").startswith(starts):
                    return m
            return None

        await self.tg.wait_until(lambda: found() is not None, wait_s=WAIT_S)
        message = found()
        assert message is not None
        return message.text or ""

    async def reply_to(self, chat: Json, sender: Json, text: str, **kw: Any) -> FakeMessage:
        """Say ``text`` and wait for the finished reply (its keyboard in place)."""
        sent = await self.tg.send_text(chat, sender, text, **kw)
        after = int(sent["message_id"])

        def done() -> FakeMessage | None:
            thread = kw.get("thread_id")
            mine = [
                m
                for m in self.tg.bot_messages(int(chat["id"]), thread_id=thread)
                if m.message_id > after
            ]
            return mine[-1] if mine and mine[-1].reply_markup is not None else None

        await self.tg.wait_until(lambda: done() is not None, wait_s=WAIT_S)
        message = done()
        assert message is not None
        return message

    async def variables(self, chat: Json, branch: str = MAIN_BRANCH) -> dict[str, Any]:
        return await self.svc.variables(telegram_key(chat), branch)


@pytest.fixture
async def real(tmp_path: Path) -> AsyncIterator[RealHarness]:
    """A booted :class:`RealHarness`; checks at the end that nothing went wrong unseen."""
    async with (
        FakeTelegramServer(max_lifetime_s=TEST_LIFETIME_S) as tg,
        FakeOpenAIServer(
            responder=NumberedReplies(),
            max_requests=MODEL_REQUESTS_MAX,
            hang_limit_s=10.0,
            lifetime_s=TEST_LIFETIME_S,
        ) as llm,
    ):
        harness = RealHarness(tg, llm, tmp_path / "telegram.db")
        await harness.boot()
        try:
            yield harness
        finally:
            await harness.shutdown()
        assert harness.errors == [], harness.errors
        assert tg.unhandled == [], tg.unhandled
