"""Nothing leaks to a Telegram chat: an unexpected failure is one line with an error id (the
details are in the log under that id), and a model URL's credentials are never shown."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from adapters.llm.openai_model import OpenAIChatModel
from tests.fakes.openai_server import FakeError, FakeOpenAIServer
from tests.test_telegram.real_engine import RealHarness, real

__all__ = ["real"]
pytestmark = pytest.mark.timeout(90)

SECRET = "my very private words"
RAW = f"(asyncpg.Error) [SQL: INSERT INTO message (raw) VALUES ($1)] [parameters: ('{SECRET}',)]"
SAFE = re.compile(r"^⚠️ The turn failed \(error ([0-9a-f]{6})\)$")


async def test_an_unexpected_failure_is_one_safe_line_with_an_error_id(
    real: RealHarness, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(self: OpenAIChatModel, request: Any) -> Any:
        raise RuntimeError(RAW)

    monkeypatch.setattr(OpenAIChatModel, "stream", broken)
    ann = real.tg.new_user("Ann")
    chat = real.tg.private_chat(ann)
    with caplog.at_level(logging.ERROR):
        await real.tg.send_text(chat, ann, f"hello, {SECRET}")
        shown = await real.wait_text(chat["id"], lambda t: t.startswith("⚠️"))
    found = SAFE.match(shown.text or "")
    assert found, shown.text
    assert all(SECRET not in t and "SQL" not in t for t in real.texts(chat["id"]))
    logged = [r for r in caplog.records if found.group(1) in r.getMessage()]
    assert logged and "INSERT INTO message" in logged[0].getMessage()


async def test_model_url_credentials_are_not_shown(
    real: RealHarness, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = real.llm.base_url
    with_password = plain.replace("http://", "http://alice:pw-hunter2@")
    monkeypatch.setattr(FakeOpenAIServer, "base_url", property(lambda self: with_password))
    await real.restart()
    real.llm.script(FakeError(status=500, message="down for maintenance"))
    ann = real.tg.new_user("Ann")
    chat = real.tg.private_chat(ann)
    await real.tg.send_text(chat, ann, "hello")
    shown = await real.wait_text(chat["id"], lambda t: t.startswith("⚠️"))
    assert "down for maintenance" in (shown.text or "")
    host = plain.removeprefix("http://").removesuffix("/v1")
    assert host in (shown.text or "")
    assert all("hunter2" not in t and "alice" not in t for t in real.texts(chat["id"]))
