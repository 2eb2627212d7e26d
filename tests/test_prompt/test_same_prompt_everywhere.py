"""One prompt for one input, wherever it is asked for (issue 15).

The same card, preset, world book, regex scripts and message go to ``tavernbot prompt dry-run``
(a CLI process, JSON output), the service's dry run, a console turn, a Discord turn (the real
discord.py client against the loopback fake) and a Telegram turn (real aiogram against the fake
Bot API). The turns' prompts are the requests the fake OpenAI server recorded through the real
openai client; every one must hold the same messages as the dry runs.

The inputs exercise what a turn does to a message before assembly: a user-input regex script
that rewrites the message as it is stored (``lamp`` -> ``lantern``, which is also the world
book's key), the card's own store script that only matches after it (the order of global
and character scripts), a prompt-only script that rewrites it in the prompt only, and a macro
in the message (``{{char}}``).

Normalised, because it legitimately differs between front ends and is not what is compared:
- the user's name: every front end's speaker is called ``User`` (the Discord member's display
  name, the Telegram first name, the console's ``--user``, the CLI's ``--user``; the service's
  dry run on a branch nobody has spoken on yet names ``{{user}}`` ``User``);
- randomness: the card, preset and world book use no random macros, so no seed is involved;
- the prompt mode: the CLI has no session, so ``--mode`` names the sessions' mode.

The card has no greeting: how a chat opens is not the same on every front end yet (the
console and Telegram's ``/start`` put the greeting on floor 1, Discord's ``/tavern start``
does not), and that is not what this test compares.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from adapters.console.frontend import ConsoleFrontend
from adapters.discord.convert import session_key
from adapters.discord.runner import DiscordRunner
from engine.turns.api import SessionKey
from engine.turns.service import TavernService
from tests.conftest import ROOT
from tests.fakes.discord import FakeDiscord, Limits
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest
from tests.fakes.telegram import FakeTelegramServer
from tests.test_discord.conftest import WAIT_S, build_world, options_for
from tests.test_discord.real_engine import QUIET_DEFAULTS, Engine, webhook_replies
from tests.test_prompt.helpers import DATA
from tests.test_telegram.real_engine import RealHarness, telegram_key

pytestmark = pytest.mark.timeout(120)

USER = "User"
MESSAGE = "I light the lamp for {{char}}."
CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Mira",
        "description": "{{char}} keeps the inn at the crossroads for {{user}}.",
        "personality": "warm, watchful",
        "scenario": "A stormy night at the inn.",
        "first_mes": "",
        "mes_example": "",
        # The character's own script runs after the global ones (SillyTavern's order): it
        # only finds the word the global script stored.
        "extensions": {
            "regex_scripts": [
                {
                    "scriptName": "an old lantern (card)",
                    "findRegex": "/\\blantern\\b/",
                    "replaceString": "old lantern",
                    "placement": [1],
                    "disabled": False,
                    "markdownOnly": False,
                    "promptOnly": False,
                    "runOnEdit": True,
                }
            ]
        },
    },
}
PRESET = DATA / "preset_cc_ST_Default.json"
BOOK = {
    "entries": {
        "0": {"uid": 0, "key": ["lantern"], "content": "The inn's old lantern burns blue."},
    }
}
SCRIPTS = [
    {
        "scriptName": "lamp is lantern (stored)",
        "findRegex": "/\\blamp\\b/gi",
        "replaceString": "lantern",
        "placement": [1],
        "disabled": False,
        "markdownOnly": False,
        "promptOnly": False,
        "runOnEdit": True,
    },
    {
        "scriptName": "light is kindle (prompt only)",
        "findRegex": "/\\blight\\b/g",
        "replaceString": "kindle",
        "placement": [1],
        "disabled": False,
        "markdownOnly": False,
        "promptOnly": True,
        "runOnEdit": False,
    },
]


def _files(where: Path) -> dict[str, Path]:
    """The input files, written once for every front end."""
    where.mkdir(parents=True, exist_ok=True)
    files = {
        "card": where / "mira.json",
        "preset": PRESET,
        "worldbook": where / "inn.json",
        "regex": where / "scripts.json",
    }
    files["card"].write_text(json.dumps(CARD), encoding="utf-8")
    files["worldbook"].write_text(json.dumps(BOOK), encoding="utf-8")
    files["regex"].write_text(json.dumps(SCRIPTS), encoding="utf-8")
    return files


async def _bind(svc: TavernService, key: SessionKey, files: dict[str, Path]) -> None:
    """Open the session and import every file into it (the same for every front end)."""
    await svc.open_session(key)
    for kind in ("card", "preset", "worldbook", "regex"):
        path = files[kind]
        await svc.import_asset(key, kind, path.name, path.read_bytes())


def _wire(messages: list[Any]) -> list[tuple[str, str, str]]:
    """What the model receives of each message: role, content and name."""
    return [(m["role"], m["content"] or "", m.get("name") or "") for m in messages]


def _cli_dry_run(files: dict[str, Path], mode: str, cwd: Path) -> list[tuple[str, str, str]]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot",
            "prompt",
            "dry-run",
            "--card",
            str(files["card"]),
            "--preset",
            str(files["preset"]),
            "--worldbook",
            str(files["worldbook"]),
            "--regex",
            str(files["regex"]),
            "--user",
            USER,
            "--mode",
            mode,
            "--message",
            MESSAGE,
            "--json",
        ],
        capture_output=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    return _wire(json.loads(done.stdout)["messages"])


def _one_new_request(model: FakeOpenAIServer, before: int) -> RecordedRequest:
    """The one model request a turn made (memory and tools are off: a turn asks once)."""
    requests = model.chat_requests
    assert len(requests) == before + 1, [r.messages for r in requests[before:]]
    return requests[-1]


async def _console_and_service(
    tmp_path: Path, model: FakeOpenAIServer, files: dict[str, Path]
) -> tuple[str, list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """The service's dry run, then a console turn, on one session."""
    engine = Engine(tmp_path / "console.db", model, QUIET_DEFAULTS)
    svc = await engine.open()
    try:
        key = SessionKey(platform="console", realm="local", key="same-prompt")
        await _bind(svc, key, files)
        mode = (await svc.session_info(key)).prompt_mode
        dry = _wire(list((await svc.dry_run(key, "main", MESSAGE))["messages"]))
        out = io.StringIO()
        console = ConsoleFrontend(service=svc, key=key, user=USER, out=out, jsonl=True)
        before = len(model.chat_requests)
        assert await console.handle_line(MESSAGE)
        rows = [json.loads(line) for line in out.getvalue().splitlines()]
        assert [r["type"] for r in rows if r["type"] in ("reply", "error")] == ["reply"], rows
        turn = _wire(list(_one_new_request(model, before).messages))
    finally:
        await engine.close()
    return mode, dry, turn


async def _discord_turn(
    tmp_path: Path, model: FakeOpenAIServer, files: dict[str, Path]
) -> list[tuple[str, str, str]]:
    """The user says the message in a played Discord channel (real discord.py client)."""
    engine = Engine(tmp_path / "discord.db", model, QUIET_DEFAULTS)
    svc = await engine.open()
    fake = await FakeDiscord(limits=Limits(max_lifetime_s=60, max_requests=5_000)).start()
    runner: DiscordRunner | None = None
    try:
        world = build_world(fake)
        user = fake.add_member(world.guild, USER)
        await _bind(svc, session_key(world.guild.id, world.rp.id), files)
        runner = DiscordRunner(svc, options_for(fake))
        await runner.start()
        await runner.wait_ready(WAIT_S)
        before = len(model.chat_requests)
        await fake.say(world.rp, user, MESSAGE)
        await fake.wait_for(
            lambda: len(webhook_replies(fake, world.rp.id)) == 1, wait_s=20.0, what="the reply"
        )
        await fake.wait_idle(quiet=0.15, wait_s=20.0)
        return _wire(list(_one_new_request(model, before).messages))
    finally:
        if runner is not None:
            await runner.close()
            assert runner.errors == [] and runner.tasks.failures == []
        await fake.stop()
        await engine.close()


async def _telegram_turn(
    tmp_path: Path, model: FakeOpenAIServer, files: dict[str, Path]
) -> list[tuple[str, str, str]]:
    """The user says the message in a private Telegram chat (real aiogram client)."""
    async with FakeTelegramServer(max_lifetime_s=60.0) as tg:
        real = RealHarness(tg, model, tmp_path / "telegram.db")
        await real.boot(session_defaults=QUIET_DEFAULTS)
        try:
            user = tg.new_user(USER)
            chat = tg.private_chat(user)
            await _bind(real.svc, telegram_key(chat), files)
            before = len(model.chat_requests)
            await real.reply_to(chat, user, MESSAGE)
            return _wire(list(_one_new_request(model, before).messages))
        finally:
            await real.shutdown()
            assert real.errors == [], real.errors


async def test_the_dry_runs_and_every_front_ends_turn_send_the_same_prompt(
    tmp_path: Path,
) -> None:
    files = _files(tmp_path / "files")
    async with FakeOpenAIServer(max_requests=20, hang_limit_s=10.0, lifetime_s=110.0) as model:
        mode, service_dry, console = await _console_and_service(tmp_path, model, files)
        discord = await _discord_turn(tmp_path, model, files)
        telegram = await _telegram_turn(tmp_path, model, files)
    cli = await asyncio.to_thread(_cli_dry_run, files, mode, tmp_path)

    # The inputs did what they are for: the stored rewrite, the prompt-only rewrite and the
    # macro reached the newest user message, and the rewritten word woke the world entry.
    assert console[-1] == ("user", "I kindle the old lantern for Mira.", ""), console
    assert any("burns blue" in content for _, content, _ in console), console
    assert cli == service_dry, "the CLI dry run differs from the service's"
    assert console == service_dry, "the console turn differs from the dry run"
    assert discord == console, "the Discord turn differs from the console turn"
    assert telegram == console, "the Telegram turn differs from the console turn"
