"""Fixtures: the fake Bot API on 127.0.0.1, the in-memory service, and started runners."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from adapters.telegram.config import TelegramConfig
from adapters.telegram.runner import TelegramRunner
from tests.fakes.roleplay import FakeRoleplayService
from tests.fakes.telegram import FakeTelegramServer

TEST_LIFETIME_S = 60.0
CHUNK_PAUSE_S = 0.01
Json = dict[str, Any]


def config_for(server: FakeTelegramServer, **overrides: Any) -> TelegramConfig:
    """A runner's config pointed at ``server``, with test-sized timings (``overrides`` win)."""
    values: dict[str, Any] = {
        "token": server.token,
        "api_base": server.base_url,
        "polling_timeout_s": 1,
        "polling_backoff_min_s": 0.01,
        "polling_backoff_max_s": 0.05,
        "edit_interval_private_s": 0.0,
        "edit_interval_group_s": 0.0,
        "draft_interval_s": 0.0,
    }
    values.update(overrides)
    return TelegramConfig(**values)


class StreamingService(FakeRoleplayService):
    """The in-memory service, pausing between streamed chunks like a real model does."""

    @staticmethod
    def _paced(on_text: Any) -> Any:
        if on_text is None:
            return None

        async def paced(text: str) -> None:
            await on_text(text)
            await asyncio.sleep(CHUNK_PAUSE_S)

        return paced

    async def respond(
        self, key: Any, branch: str, lines: Any, *, on_text: Any = None, **kw: Any
    ) -> Any:
        return await super().respond(key, branch, lines, on_text=self._paced(on_text), **kw)

    async def regenerate(
        self, key: Any, branch: str, *, floor: int | None = None, on_text: Any = None
    ) -> Any:
        return await super().regenerate(key, branch, floor=floor, on_text=self._paced(on_text))


class Harness:
    """A fake server, a service and the runners started against them in one test."""

    def __init__(self, server: FakeTelegramServer, service: StreamingService) -> None:
        self.server = server
        self.service = service
        self.runners: list[TelegramRunner] = []
        self.slept: list[float] = []

    async def _sleep(self, seconds: float) -> None:
        self.slept.append(seconds)  # retries in tests do not wait for real

    def config(self, **overrides: Any) -> TelegramConfig:
        return config_for(self.server, **overrides)

    async def start(self, service: Any = None, **overrides: Any) -> TelegramRunner:
        runner = TelegramRunner(
            service or self.service, self.config(**overrides), sleep=self._sleep
        )
        self.runners.append(runner)
        await runner.start()
        return runner

    async def start_private(self, name: str = "Alice", **overrides: Any) -> tuple[Json, Json]:
        """Start a runner (``overrides`` as for :meth:`start`); return a new user called
        ``name`` and their private chat with the bot."""
        await self.start(**overrides)
        user = self.server.new_user(name)
        return user, self.server.private_chat(user)

    async def stop(self, runner: TelegramRunner) -> None:
        await runner.stop()
        self.runners.remove(runner)
        assert runner.errors == [], runner.errors

    def texts(self, chat_id: int, **kw: Any) -> list[str]:
        return [m.text or "" for m in self.server.bot_messages(chat_id, **kw)]

    async def wait_split_reply(self, chat_id: int, parts: int) -> None:
        """Wait until the chat shows ``parts`` bot messages, the last with its keyboard: a
        reply split in that many messages, complete."""
        await self.server.wait_until(
            lambda: (
                len(self.texts(chat_id)) == parts
                and self.server.bot_messages(chat_id)[-1].reply_markup is not None
            )
        )

    async def wait_text(
        self, chat_id: int, predicate: Callable[[str], bool], *, wait_s: float = 10.0, **kw: Any
    ) -> Any:
        """Wait until a bot message in the chat satisfies ``predicate``; return it."""

        def found() -> Any:
            for msg in self.server.bot_messages(chat_id, **kw):
                if predicate(msg.text or ""):
                    return msg
            return None

        await self.server.wait_until(lambda: found() is not None, wait_s=wait_s)
        return found()


@pytest.fixture
async def harness() -> AsyncIterator[Harness]:
    async with FakeTelegramServer(max_lifetime_s=TEST_LIFETIME_S) as server:
        h = Harness(server, StreamingService())
        try:
            yield h
        finally:
            for runner in list(h.runners):
                await h.stop(runner)
        assert server.unhandled == [], server.unhandled
