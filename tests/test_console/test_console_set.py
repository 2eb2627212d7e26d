"""``/set`` and ``/info`` on the console, on the real engine (SQLite file, offline model):
options change for the session they were set in only, ``/info`` shows every one under the
name ``/set`` takes, and a bad option or value is one error line."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from adapters.console.frontend import HELP, ConsoleFrontend
from engine.turns.api import SessionKey
from engine.turns.service import TavernService

pytestmark = pytest.mark.timeout(60)
ONE = SessionKey(platform="console", realm="local", key="one")
OTHER = SessionKey(platform="console", realm="local", key="other")
CONSOLE_OPTIONS = ["mode", "tools", "memory", "budget", "macros", "global_writes"]


class Console:
    """A jsonl console on one session that hands back the lines each input produced."""

    def __init__(self, service: TavernService, key: SessionKey, *, jsonl: bool = True) -> None:
        self.out = io.StringIO()
        self.front = ConsoleFrontend(
            service=service, key=key, user="Ann", out=self.out, jsonl=jsonl
        )
        self._seen = 0

    async def say(self, line: str) -> list[dict[str, Any]]:
        assert await self.front.handle_line(line)
        rows = self.out.getvalue().splitlines()[self._seen :]
        self._seen += len(rows)
        return [json.loads(row) for row in rows]

    async def options(self) -> dict[str, str]:
        (row,) = await self.say("/info")
        assert row["type"] == "info"
        options: dict[str, str] = row["options"]
        # the plain text names them too, in the same words
        for name, value in options.items():
            assert f"{name} {value}" in row["message"]
        return options


async def test_set_changes_this_session_only_and_info_shows_it(
    offline_engine: TavernService,
) -> None:
    for key in (ONE, OTHER):
        await offline_engine.open_session(key)
    one, other = Console(offline_engine, ONE), Console(offline_engine, OTHER)
    before = await other.options()
    assert list(before) == CONSOLE_OPTIONS
    assert (before["mode"], before["tools"], before["memory"]) == ("compat_plus", "off", "on")

    for line, option, value in [
        ("/set mode native", "mode", "native"),
        ("/set tools ON", "tools", "on"),
        ("/set memory off", "memory", "off"),
        ("/set budget 300", "budget", "300"),
        ("/set macros full", "macros", "full"),
    ]:
        (row,) = await one.say(line)
        assert (row["type"], row["option"], row["value"]) == ("info", option, value), line
        assert "this session only" in row["message"]

    changed = await one.options()
    assert changed == {**before, "mode": "native", "tools": "on", "memory": "off",
                       "budget": "300", "macros": "full"}  # fmt: skip
    # the engine holds them, not the front end: a fresh console on the session reads them back
    assert await Console(offline_engine, ONE).options() == changed
    assert await other.options() == before
    # the prompt is built the new way for this session, and as before for the other one
    dry_one = json.loads((await one.say("/dryrun hi"))[0]["message"])
    dry_other = json.loads((await other.say("/dryrun hi"))[0]["message"])
    assert (dry_one["mode"], dry_other["mode"]) == ("native", "compat_plus")
    assert dry_one["tools"] and not dry_other["tools"]
    info = await offline_engine.session_info(ONE)
    assert (info.prompt_mode, info.tools, info.memory, info.memory_budget) == (
        "native", True, False, 300,
    )  # fmt: skip


async def test_set_alone_lists_every_option_with_its_value_and_choices(
    offline_engine: TavernService,
) -> None:
    await offline_engine.open_session(ONE)
    one = Console(offline_engine, ONE)
    await one.say("/set tools on")
    (row,) = await one.say("/set")
    assert row["type"] == "info"
    items = {item["name"]: item for item in row["items"]}
    assert list(items) == CONSOLE_OPTIONS
    assert items["mode"]["values"] == ["compat_strict", "compat_plus", "native"]
    assert (items["tools"]["value"], items["tools"]["values"]) == ("on", ["on", "off"])
    assert items["budget"]["values"] == [] and items["budget"]["value"].isdigit()
    assert all(item["help"] for item in items.values())
    shown = [line.split() for line in row["message"].splitlines()[1:]]
    assert [words[:2] for words in shown] == [[name, items[name]["value"]] for name in items]
    assert shown[0][2:] == ["compat_strict", "|", "compat_plus", "|", "native"]
    assert shown[1][:2] == ["tools", "on"]
    (single,) = await one.say("/set memory")
    assert [item["name"] for item in single["items"]] == ["memory"]
    assert "/set" in HELP


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("/set mode fast", ["mode", "compat_strict, compat_plus, native", "'fast'"]),
        ("/set tools maybe", ["tools", "on", "off", "'maybe'"]),
        ("/set memory 2", ["memory", "'2'"]),
        ("/set budget lots", ["budget", "'lots'"]),
        ("/set budget -5", ["budget", "-5"]),
        ("/set budget 99999999999", ["budget", "99999999999"]),
        ("/set moode native", ["'moode'", "mode, tools, memory"]),
        ("/set policy mention", ["policy", "console"]),
        ("/set mode native extra", ["usage: /set OPTION VALUE"]),
    ],
)
async def test_a_bad_option_or_value_is_one_error_line_and_changes_nothing(
    offline_engine: TavernService, line: str, says: list[str]
) -> None:
    await offline_engine.open_session(ONE)
    one = Console(offline_engine, ONE)
    before = await one.options()
    rows = await one.say(line)
    assert [r["type"] for r in rows] == ["error"]
    message = rows[0]["message"]
    assert "\n" not in message and "Traceback" not in message
    for part in says:
        assert part in message, (line, message)
    assert await one.options() == before


async def test_plain_mode_set_and_error_are_single_lines(offline_engine: TavernService) -> None:
    await offline_engine.open_session(ONE)
    one = Console(offline_engine, ONE, jsonl=False)
    assert await one.front.handle_line("/set mode native")
    assert await one.front.handle_line("/set mode fast")
    assert await one.front.handle_line("/info")
    lines = one.out.getvalue().splitlines()
    assert lines[0] == "* mode = native (this session only)"
    assert lines[1].startswith("! session option mode must be one of")
    assert any("mode native" in line for line in lines[2:])
