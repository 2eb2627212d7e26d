"""Issue 16: a turn stopped by its front end (``task.cancel(STOP_TURN)``) keeps what streamed.

As a stopped reply in SillyTavern: the text shown so far becomes the page's reply, marked
``stopped`` in its meta; any other cancellation still fails the turn.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from engine.turns.api import MAIN_BRANCH, STOP_TURN, ReplyView
from engine.turns.service import TavernService
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_turns.conftest import KEY, line


async def _cancel_after_first_chunk(
    remote: TavernService, fake: FakeOpenAIServer, message: str | None
) -> asyncio.Task[ReplyView]:
    """Start a turn, cancel it (with ``message``) once its first chunk arrived; the task."""
    hold = asyncio.Event()  # the stream waits after its first chunk until the cancel
    fake.script(FakeReply(text="Half a reply and the rest", chunk_chars=7, hold=hold))
    first = asyncio.Event()

    async def on_text(text: str) -> None:
        first.set()

    task = asyncio.ensure_future(remote.respond(KEY, MAIN_BRANCH, [line("go")], on_text=on_text))
    try:
        await asyncio.wait_for(first.wait(), 30)
        task.cancel(message)
        await asyncio.wait({task})
    finally:
        hold.set()
    return task


async def test_a_stopped_turn_keeps_the_streamed_text_marked_stopped(
    remote: TavernService, fake: FakeOpenAIServer, tmp_path: Path
) -> None:
    task = await _cancel_after_first_chunk(remote, fake, STOP_TURN)
    assert task.result().text == "Half a "
    (view,) = await remote.history(KEY, MAIN_BRANCH)
    assert view.text == "Half a " and not view.failed
    with sqlite3.connect(tmp_path / "turns.db") as db:
        metas = [json.loads(m) for (m,) in db.execute("SELECT meta FROM page")]
    assert [m.get("stopped") for m in metas if m] == [True]
    fake.script(FakeReply(text="next"))
    assert (await remote.respond(KEY, MAIN_BRANCH, [line("again")])).floor == 2


async def test_any_other_cancellation_still_fails_the_turn(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    task = await _cancel_after_first_chunk(remote, fake, None)
    assert task.cancelled()
    (view,) = await remote.history(KEY, MAIN_BRANCH)
    assert view.failed
