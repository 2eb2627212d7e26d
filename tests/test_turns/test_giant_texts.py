"""Issue 12: a message of a million characters never breaks later turns.

Before, the tokenizer refused texts over a million characters (or 200k tokens), so a giant
message in the history (imported in a chat, or a 5 MB model reply) made every later turn fail.
Now long texts are counted in pieces (estimated past a named size), the history is trimmed from
the oldest message before anything is spent on it, and over-long inputs are refused or cut at
the door with a clear message.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from engine.turns.workflow import MAX_REPLY_CHARS
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_turns.conftest import KEY, line

MILLION = 1_000_000


def _chat(*lines: dict[str, object]) -> bytes:
    return "\n".join(json.dumps(x) for x in lines).encode()


async def test_an_imported_million_character_message_does_not_break_the_session(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    giant = "word " * (MILLION // 5 + 1)
    data = _chat(
        {"user_name": "Ann", "character_name": "Mira", "chat_metadata": {}},
        {"name": "Ann", "is_user": True, "mes": "tell me a long story"},
        {"name": "Mira", "is_user": False, "mes": giant},
        {"name": "Ann", "is_user": True, "mes": "and then?"},
        {"name": "Mira", "is_user": False, "mes": "The end."},
    )
    summary = await remote.import_asset(KEY, "chat", "long.jsonl", data)
    branch = summary.name
    fake.script(FakeReply(text="Hello again."), FakeReply(text="Still here."))
    first = await remote.respond(KEY, branch, [line("hi")])
    second = await remote.respond(KEY, branch, [line("still there?")])
    assert (first.text, second.text) == ("Hello again.", "Still here.")
    sent = [m["content"] for m in fake.chat_requests[1].messages]
    # the giant message was trimmed away (it cannot fit); the newer lines were kept
    assert all(len(c) < MILLION for c in sent)
    assert any("The end." in c for c in sent) and any(c == "hi" for c in sent)


async def test_a_five_megabyte_model_reply_does_not_break_the_next_turn(
    remote: TavernService, fake: FakeOpenAIServer, tmp_path: Path
) -> None:
    huge = "x" * (5 * 1024 * 1024)
    fake.script(FakeReply(text=huge, chunk_chars=64 * 1024), FakeReply(text="Short now."))
    first = await remote.respond(KEY, MAIN_BRANCH, [line("talk a lot")])
    # cut at the named size rather than stored whole, with a warning on the page
    assert first.text == "x" * MAX_REPLY_CHARS
    (stored,) = [v.text for v in await remote.history(KEY, MAIN_BRANCH) if v.floor == 1]
    assert len(stored) == MAX_REPLY_CHARS
    with sqlite3.connect(tmp_path / "turns.db") as db:
        (meta,) = db.execute("SELECT meta FROM page").fetchone()
    assert f"MAX_REPLY_CHARS={MAX_REPLY_CHARS}" in " ".join(json.loads(meta)["warnings"])
    after = await remote.respond(KEY, MAIN_BRANCH, [line("and now?")])
    assert after.text == "Short now."
    assert all(len(m["content"]) <= MAX_REPLY_CHARS for m in fake.chat_requests[1].messages)
