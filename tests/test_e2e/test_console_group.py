"""Group role-play through ``tavernbot chat --jsonl`` (a real process) and the fake model
server: two cards given with ``--character`` play as a group; who answers follows the names in
a message, muting, the list and manual strategies and ``/speak``; ``--group`` takes a
SillyTavern group definition."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import QUIET_MEMORY_AGENT as AGENT
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply
from tests.test_e2e.console import ConsoleProcess, chat_env
from tests.test_turns.group_support import card_bytes

pytestmark = pytest.mark.timeout(120)
SENTINEL = "/members"
"""Sent after a line to know that everything the line printed has been read."""


def _cards(folder: Path) -> tuple[Path, Path]:
    mira, kael = folder / "Mira.json", folder / "Kael.json"
    mira.write_bytes(card_bytes("Mira", "Mira keeps the lighthouse."))
    kael.write_bytes(card_bytes("Kael", "Kael rows the ferry."))
    return mira, kael


async def _said(proc: ConsoleProcess, text: str) -> list[dict[str, Any]]:
    """Everything ``text`` printed: the lines read until the answer of :data:`SENTINEL`."""
    await proc.send(text)
    await proc.send(SENTINEL)
    lines: list[dict[str, Any]] = []
    while not str((line := await proc.read()).get("message", "")).startswith("members: "):
        lines.append(line)
    return lines


def _replies(lines: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(x["character"], x["text"]) for x in lines if x["type"] == "reply"]


async def test_two_cards_play_as_a_group(tmp_path: Path) -> None:
    mira, kael = await asyncio.to_thread(_cards, tmp_path)
    async with FakeOpenAIServer(max_requests=40, lifetime_s=110.0, memory_agent=AGENT) as fake:
        proc = await ConsoleProcess.start(
            chat_env(tmp_path / "group.db", fake.base_url),
            "--session", "crew", "--character", str(mira), "--character", str(kael),
            "--user", "Ann",
            cwd=tmp_path,
        )  # fmt: skip
        try:
            members = await proc.ask(SENTINEL, kinds=("info",))
            assert members["message"] == "members: Mira, Kael; strategy natural, mode swap"
            # Both named: two replies, in the order the message names them; the second
            # speaker's prompt holds the first one's reply.
            fake.script(FakeReply(text="I row at dawn."), FakeReply(text="I keep the lamp lit."))
            said = await _said(proc, "Kael and Mira, what do you think?")
            assert _replies(said) == [("Kael", "I row at dawn."), ("Mira", "I keep the lamp lit.")]
            assert [x["floor"] for x in said if x["type"] == "reply"] == [1, 2]
            assert "I row at dawn." in str(fake.chat_requests[-1].messages)
            assert "Mira keeps the lighthouse." in str(fake.chat_requests[-1].messages)
            # Muted, Kael never answers, even named.
            assert (await proc.ask("/mute Kael", kinds=("info",)))["muted"] == ["Kael"]
            assert [c for c, _ in _replies(await _said(proc, "Kael? Mira?"))] == ["Mira"]
            # list: every unmuted member in list order.
            await proc.ask("/unmute Kael", kinds=("info",))
            await proc.ask("/strategy list", kinds=("info",))
            assert [c for c, _ in _replies(await _said(proc, "Kael, go on"))] == ["Mira", "Kael"]
            # manual: nobody answers; /speak makes one member answer now.
            await proc.ask("/strategy manual", kinds=("info",))
            said = await _said(proc, "Anyone there?")
            assert _replies(said) == []
            assert [x["message"] for x in said] == ["nobody answered; /speak NAME"]
            fake.script(FakeReply(text="Here."))
            assert _replies(await _said(proc, "/speak kael")) == [("Kael", "Here.")]
            info = await proc.ask("/info", kinds=("info",))
            assert (info["members"], info["muted"], info["strategy"], info["mode"]) == (
                ["Mira", "Kael"],
                [],
                "manual",
                "swap",
            )
            assert "members: Mira, Kael; strategy manual, mode swap" in info["message"]
            assert await proc.close() == 0
        finally:
            if proc.proc.returncode is None:
                proc.proc.kill()
                await proc.proc.wait()


async def test_a_group_definition_given_to_chat(tmp_path: Path) -> None:
    mira, kael = await asyncio.to_thread(_cards, tmp_path)
    group = tmp_path / "1700000000000.json"
    definition = {
        "id": "1700000000000",
        "name": "Crew",
        "members": ["Kael.png", "Mira.png"],
        "disabled_members": ["Mira.png"],
        "activation_strategy": 1,
        "generation_mode": 1,
        "chat_id": "Crew - 1",
    }
    await asyncio.to_thread(group.write_text, json.dumps(definition))
    async with FakeOpenAIServer(max_requests=10, lifetime_s=60.0, memory_agent=AGENT) as fake:
        proc = await ConsoleProcess.start(
            chat_env(tmp_path / "group.db", fake.base_url),
            "--session", "crew", "--character", str(mira), "--character", str(kael),
            "--group", str(group),
            cwd=tmp_path,
        )  # fmt: skip
        try:
            members = await proc.ask(SENTINEL, kinds=("info",))
            assert members["message"] == "members: Kael, Mira (muted); strategy list, mode join"
            said = await _said(proc, "Mira and Kael?")  # list order; Mira is muted
            assert [c for c, _ in _replies(said)] == ["Kael"]
            assert await proc.close() == 0
        finally:
            if proc.proc.returncode is None:
                proc.proc.kill()
                await proc.proc.wait()
