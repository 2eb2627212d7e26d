"""Group role-play in the console on the real engine (SQLite file, offline model): the group
commands, one ``reply`` per member's reply with its ``character``, the speaker's name before
each reply on a terminal, and a turn nobody answered."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from adapters.console.frontend import HELP, ConsoleFrontend
from adapters.console.group_commands import GROUP_COMMANDS, NOBODY_ANSWERED, speaker_label
from engine.turns.api import SessionKey
from engine.turns.service import TavernService
from tests.test_turns.group_support import card_bytes

pytestmark = pytest.mark.timeout(60)
KEY = SessionKey(platform="console", realm="local", key="group-test")


async def _group_console(service: TavernService, *, jsonl: bool) -> tuple[ConsoleFrontend, Any]:
    """A console on a session playing Mira, with Kael's card in the realm (not yet added);
    both cards have talkativeness 0, so only the members a message names answer."""
    await service.open_session(KEY)
    await service.import_asset(KEY, "card", "mira.json", card_bytes("Mira", "Mira keeps a lamp."))
    await service.import_asset(
        KEY, "card", "kael.json", card_bytes("Kael", "Kael rows."), bind=False
    )
    out = io.StringIO()
    return ConsoleFrontend(service=service, key=KEY, user="Ann", out=out, jsonl=jsonl), out


async def _rows(console: ConsoleFrontend, out: io.StringIO, *lines: str) -> list[dict[str, Any]]:
    start = len(out.getvalue())
    for text in lines:
        assert await console.handle_line(text)
    return [json.loads(row) for row in out.getvalue()[start:].splitlines()]


def _replies(rows: list[dict[str, Any]]) -> list[tuple[int, str]]:
    return [(r["floor"], r["character"]) for r in rows if r["type"] == "reply"]


async def test_group_commands_and_one_reply_per_member(offline_engine: TavernService) -> None:
    console, out = await _group_console(offline_engine, jsonl=True)
    (solo,) = await _rows(console, out, "/members")
    assert solo["members"] == [] and "plays Mira alone" in solo["message"]
    (added,) = await _rows(console, out, "/add kael")  # any case finds the realm's card
    assert added["message"] == "Kael joins; members: Mira, Kael; strategy natural, mode swap"
    assert (added["members"], added["muted"], added["strategy"]) == (
        ["Mira", "Kael"],
        [],
        "natural",
    )

    # Both named: both answer, in the order the message names them, each on its own floor.
    rows = await _rows(console, out, "Kael and Mira, what now?")
    assert _replies(rows) == [(1, "Kael"), (2, "Mira")]
    assert all(r["text"] for r in rows if r["type"] == "reply")
    assert _replies(await _rows(console, out, "Mira?")) == [(3, "Mira")]

    # A muted member never answers, even when named.
    (muted,) = await _rows(console, out, "/mute Kael")
    assert muted["muted"] == ["Kael"] and "Kael (muted)" in muted["message"]
    assert _replies(await _rows(console, out, "Kael and Mira?")) == [(4, "Mira")]

    # list: every unmuted member in list order, whatever the message names.
    await _rows(console, out, "/strategy list", "/unmute Kael")
    assert _replies(await _rows(console, out, "Kael, then?")) == [(5, "Mira"), (6, "Kael")]

    # manual: nobody answers a message (it stays a floor); /speak makes one member answer.
    await _rows(console, out, "/strategy manual")
    rows = await _rows(console, out, "Anyone?")
    assert _replies(rows) == []
    assert [r["message"] for r in rows] == [NOBODY_ANSWERED]
    assert rows[0]["floor"] == 7 and rows[0]["unanswered"] is True
    assert _replies(await _rows(console, out, "/speak kael")) == [(8, "Kael")]

    (mode,) = await _rows(console, out, "/mode join")
    assert mode["mode"] == "join"
    (info,) = await _rows(console, out, "/info")
    assert "members: Mira, Kael; strategy manual, mode join" in info["message"]
    assert (info["members"], info["strategy"], info["mode"]) == (
        ["Mira", "Kael"],
        "manual",
        "join",
    )
    await _rows(console, out, "/mute Mira")
    (members,) = await _rows(console, out, "/members")
    assert members["message"] == "members: Mira (muted), Kael; strategy manual, mode join"
    assert members["muted"] == ["Mira"]

    # /history names each reply's speaker and marks the floor nobody answered.
    history = await _rows(console, out, "/history 3")
    assert [(h["floor"], h["character"], h["unanswered"]) for h in history] == [
        (6, "Kael", False),
        (7, "", True),
        (8, "Kael", False),
    ]

    (removed,) = await _rows(console, out, "/remove Kael")
    assert removed["members"] == [] and "plays Mira alone" in removed["message"]
    (info,) = await _rows(console, out, "/info")  # solo again: no group fields
    assert "members" not in info and "members:" not in info["message"]


async def test_group_command_mistakes_are_one_line(offline_engine: TavernService) -> None:
    console, out = await _group_console(offline_engine, jsonl=True)
    rows = await _rows(console, out, "/strategy list", "/add", "/speak Nobody", "/add Nobody")
    assert [r["type"] for r in rows] == ["error"] * 4
    assert "plays one character" in rows[0]["message"]  # a solo session has no strategy
    assert rows[1]["message"].startswith("usage: /add NAME")
    assert (
        "Nobody is not a character of session group-test (its characters: Mira)"
        in (rows[2]["message"])
    )
    assert "no card named 'Nobody'" in rows[3]["message"] and "Kael" in rows[3]["message"]
    await _rows(console, out, "/add Kael")
    rows = await _rows(console, out, "/strategy loud", "/mode mixed", "/mute", "/remove Bob")
    assert [r["type"] for r in rows] == ["error"] * 4
    assert "natural, list, pooled, manual" in rows[0]["message"]
    assert "swap, join" in rows[1]["message"]
    assert rows[2]["message"] == "usage: /mute NAME"
    assert "Bob is not a character" in rows[3]["message"]
    assert all(command in HELP for command in GROUP_COMMANDS)


async def test_terminal_labels_each_reply_with_its_speaker(offline_engine: TavernService) -> None:
    console, out = await _group_console(offline_engine, jsonl=False)
    assert await console.handle_line("Mira?")  # solo: printed as before, no label
    solo = out.getvalue()
    assert not solo.startswith(speaker_label("Mira")) and "‹ 1/1 › [main #1]" in solo
    await console.handle_line("/add Kael")
    start = len(out.getvalue())
    assert await console.handle_line("Kael and Mira?")
    lines = out.getvalue()[start:].splitlines()
    # Each reply: its speaker's name, the reply, then its page marker.
    assert lines[0].startswith(speaker_label("Kael")) and len(lines[0]) > len("Kael: ")
    assert lines[1] == "  ‹ 1/1 › [main #2]"
    assert lines[2].startswith(speaker_label("Mira")) and len(lines[2]) > len("Mira: ")
    assert lines[3] == "  ‹ 1/1 › [main #3]"
    assert len(lines) == 4
    # A new page of the latest reply, and a swipe back, also name its speaker.
    for command, marker in (
        ("/regen", "‹ 2/2 ›"),
        ("/continue", "‹ 3/3 ›"),
        ("/swipe <", "‹ 2/3 ›"),
    ):
        start = len(out.getvalue())
        assert await console.handle_line(command)
        shown = out.getvalue()[start:].splitlines()
        assert shown[0].startswith(speaker_label("Mira")), (command, shown)
        assert shown[-1] == f"  {marker} [main #3]", (command, shown)
    await console.handle_line("/strategy manual")
    start = len(out.getvalue())
    await console.handle_line("Hello?")
    assert out.getvalue()[start:] == f"* {NOBODY_ANSWERED}\n"
    start = len(out.getvalue())
    await console.handle_line("/speak mira")
    spoken = out.getvalue()[start:].splitlines()
    assert spoken[0].startswith("Mira: ") and spoken[1] == "  ‹ 1/1 › [main #5]"
    start = len(out.getvalue())
    await console.handle_line("/history 2")
    assert out.getvalue()[start:].splitlines() == [
        "#4 Ann: Hello?",
        "   ‹nobody answered›",
        f"#5 {spoken[0].replace('Mira: ', 'Mira ‹1/1›: ', 1)}",
    ]


async def test_import_tells_a_group_definition_by_its_keys(
    tmp_path: Path, offline_engine: TavernService
) -> None:
    console, out = await _group_console(offline_engine, jsonl=True)
    crew = tmp_path / "1700000000000.json"
    definition = {
        "name": "Crew",
        "members": ["Kael.png", "Mira.png"],
        "disabled_members": [],
        "activation_strategy": 1,
        "generation_mode": 0,
    }
    crew.write_text(json.dumps(definition), encoding="utf-8")
    (refused,) = await _rows(console, out, f"/import {crew} preset")
    assert refused["type"] == "error"
    assert "a SillyTavern group definition, not a Chat Completion preset" in refused["message"]
    assert f"/import {crew.name} group" in refused["message"]
    (imported,) = await _rows(console, out, f"/import {crew}")
    assert (
        imported["message"] == "imported group 'Crew': Kael, Mira play in this session (/members)"
    )
    (members,) = await _rows(console, out, "/members")
    assert members["message"] == "members: Kael, Mira; strategy list, mode swap"
