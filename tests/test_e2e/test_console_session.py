"""End to end through ``tavernbot chat --jsonl`` (a real process) and the fake model server:
a 20-turn session whose preset and card use macros, tool writes that follow regenerate and
swipe, a fork with its own state, read-only user macros."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.fakes.openai_server import QUIET_MEMORY_AGENT as AGENT
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeToolCall
from tests.test_e2e.console import ConsoleProcess, chat_env

pytestmark = pytest.mark.timeout(120)

CARD = {
    "spec": "chara_card_v2",
    "spec_version": "2.0",
    "data": {
        "name": "Mira",
        "description": "{{char}} is a fox who talks to {{user}}.",
        "personality": "curious",
        "scenario": "",
        "first_mes": "",
        "mes_example": "",
    },
}
PRESET = {
    "prompts": [
        {
            "identifier": "main",
            "name": "Main Prompt",
            "content": "{{addvar::turns::1}}You are {{char}}. Turn {{getvar::turns}}.",
        }
    ]
}


def set_mood(value: str) -> FakeReply:
    args = json.dumps({"name": "mood", "value": value})
    return FakeReply(tool_calls=[FakeToolCall(name="set_variable", arguments=args)])


def _files(folder: Path) -> tuple[Path, Path]:
    card = folder / "mira.json"
    card.write_text(json.dumps(CARD))
    preset = folder / "story.json"
    preset.write_text(json.dumps(PRESET))
    return card, preset


async def test_twenty_turn_session_with_tools_swipes_and_a_fork(tmp_path: Path) -> None:
    card, preset = await asyncio.to_thread(_files, tmp_path)
    async with FakeOpenAIServer(max_requests=120, lifetime_s=110.0, memory_agent=AGENT) as fake:
        proc = await ConsoleProcess.start(
            chat_env(tmp_path / "e2e.db", fake.base_url),
            "--session", "e2e", "--character", str(card), "--preset", str(preset),
            "--user", "Ann", "--tools", "on",
            cwd=tmp_path,
        )  # fmt: skip
        try:
            fake.script(set_mood("happy"), FakeReply(text="Mira smiles."))
            first = await proc.ask("hello")
            assert (first["type"], first["floor"], first["text"]) == ("reply", 1, "Mira smiles.")
            fake.script(set_mood("grim"), FakeReply(text="Mira frowns."))
            regen = await proc.ask("/regen")
            assert (regen["page"], regen["pages"], regen["text"]) == (2, 2, "Mira frowns.")
            assert (await proc.ask("/vars"))["vars"]["mood"] == "grim"
            back = await proc.ask("/swipe <")
            assert (back["page"], back["text"]) == (1, "Mira smiles.")
            assert (await proc.ask("/vars"))["vars"]["mood"] == "happy"
            await proc.ask("/swipe >")
            assert (await proc.ask("/vars"))["vars"]["mood"] == "grim"
            for turn in range(2, 21):
                reply = await proc.ask(f"message {turn}")
                assert (reply["floor"], reply["text"]) == (turn, f"echo: message {turn}")
            # the preset's macros ran once per turn, and the card's {{char}}/{{user}} expanded
            last = fake.chat_requests[-1].messages
            assert last[0]["content"].startswith("You are Mira. Turn 20.")
            assert any("Mira is a fox who talks to Ann." in m["content"] for m in last)
            main_vars = (await proc.ask("/vars"))["vars"]
            assert (str(main_vars["turns"]), main_vars["mood"]) == ("20", "grim")
            # a fork after floor 10 has the state of floor 10 and goes its own way
            await proc.ask("/fork 10", kinds=("info",))
            assert str((await proc.ask("/vars"))["vars"]["turns"]) == "10"
            fake.script(set_mood("wistful"), FakeReply(text="On the fork."))
            forked = await proc.ask("what if")
            assert (forked["branch"], forked["floor"]) == ("main-10", 11)
            fork_vars = (await proc.ask("/vars"))["vars"]
            assert (str(fork_vars["turns"]), fork_vars["mood"]) == ("11", "wistful")
            await proc.ask("/switch main", kinds=("info",))
            main_again = (await proc.ask("/vars"))["vars"]
            assert (str(main_again["turns"]), main_again["mood"]) == ("20", "grim")
            # user-typed write macros do nothing; {{user}} still expands
            typed = await proc.ask("{{setvar::x::1}}I am {{user}}")
            assert typed["text"] == "echo: {{setvar::x::1}}I am Ann"
            assert "x" not in (await proc.ask("/vars"))["vars"]
        finally:
            code = await proc.close()
        assert code == 0
