"""A new chat's first prompt holds the card's greeting, as SillyTavern's does (its chat opens
with ``first_mes`` as the first assistant message): the CLI dry run without ``--history`` and
the service's dry run on a branch with no floor show it, once, and not again once the session
has stored it as floor 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.storage import SqlStorage, open_storage
from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from tests.conftest import ROOT
from tests.test_turns.conftest import KEY, Recorder, line, offline_service

GREETING = "Welcome to the inn, {{user}}. I am {{char}}."
CARD: dict[str, Any] = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Mira",
        "description": "{{char}} keeps the inn.",
        "personality": "",
        "scenario": "",
        "first_mes": GREETING,
        "alternate_greetings": ["Back again, {{user}}?"],
        "mes_example": "",
    },
}
SHOWN = "Welcome to the inn, Ann. I am Mira."
"""The greeting as the prompt has it for a user called Ann."""


def _cli(*args: str) -> dict[str, Any]:
    """``tavernbot prompt dry-run ... --json`` in its own process."""
    done = subprocess.run(
        [sys.executable, "-m", "bot", "prompt", "dry-run", *args, "--json"],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _chat(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in messages if m["role"] != "system"]


def test_cli_dry_run_without_history_opens_with_the_greeting(tmp_path: Path) -> None:
    card = tmp_path / "mira.json"
    card.write_text(json.dumps(CARD), encoding="utf-8")
    data = _cli("--card", str(card), "--user", "Ann", "--message", "A room, please.")
    assert _chat(data["messages"]) == [("assistant", SHOWN), ("user", "A room, please.")]


def test_cli_dry_run_with_history_does_not_add_it_again(tmp_path: Path) -> None:
    card = tmp_path / "mira.json"
    card.write_text(json.dumps(CARD), encoding="utf-8")
    history = tmp_path / "chat.jsonl"
    rows = [
        {"user_name": "Ann", "character_name": "Mira", "chat_metadata": {}},
        {"name": "Mira", "is_user": False, "mes": "An old greeting."},
    ]
    history.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    data = _cli(
        "--card", str(card), "--history", str(history), "--user", "Ann", "--message", "Hi."
    )
    assert _chat(data["messages"]) == [("assistant", "An old greeting."), ("user", "Hi.")]


def test_cli_card_without_greeting_has_none(tmp_path: Path) -> None:
    plain = {**CARD, "data": {**CARD["data"], "first_mes": "  ", "alternate_greetings": []}}
    card = tmp_path / "plain.json"
    card.write_text(json.dumps(plain), encoding="utf-8")
    data = _cli("--card", str(card), "--message", "Hi.")
    assert _chat(data["messages"]) == [("user", "Hi.")]


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[TavernService]:
    storage: SqlStorage = await open_storage(f"sqlite+aiosqlite:///{tmp_path}/greet.db")
    svc = offline_service(storage, Recorder())
    await svc.start()
    await svc.open_session(KEY)
    try:
        yield svc
    finally:
        await storage.close()


async def test_service_dry_run_on_a_branch_with_no_floor_opens_with_the_greeting(
    service: TavernService,
) -> None:
    await service.import_asset(KEY, "card", "mira.json", json.dumps(CARD).encode())
    await service.respond(KEY, MAIN_BRANCH, [line("Hello.")])
    # A fork from before floor 1 has no floor: a new chat, opened by the greeting.
    await service.fork(KEY, MAIN_BRANCH, after_floor=0, name="fresh")
    report = await service.dry_run(KEY, "fresh", "A room, please.")
    assert _chat(list(report["messages"])) == [
        ("assistant", "Welcome to the inn, User. I am Mira."),
        ("user", "A room, please."),
    ]
    assert await service.history(KEY, "fresh") == []  # a dry run stores nothing


async def test_service_dry_run_after_the_stored_greeting_has_it_once(
    service: TavernService,
) -> None:
    await service.import_asset(KEY, "card", "mira.json", json.dumps(CARD).encode())
    before = await service.dry_run(KEY, MAIN_BRANCH, "A room, please.")
    assert await service.greet(KEY, user_name="User") is not None
    after = await service.dry_run(KEY, MAIN_BRANCH, "A room, please.")
    greeting = "Welcome to the inn, User. I am Mira."
    assert _chat(list(before["messages"])) == [
        ("assistant", greeting),
        ("user", "A room, please."),
    ]
    assert _chat(list(after["messages"])) == _chat(list(before["messages"]))
