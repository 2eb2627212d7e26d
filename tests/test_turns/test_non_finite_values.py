"""Issue 12: no path stores a number that is not finite (NaN, Infinity) in a variable.

Stored, such a number made SQLite's ``/vars`` print invalid JSON, broke the native export's
round trip and failed every later turn on PostgreSQL. Macros refuse it with a warning (see
tests/test_macros/test_non_finite.py); explicit writes (``/vars set``) and the model's
``set_variable`` tool refuse it with a clear error.
"""

from __future__ import annotations

import json
import math
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.storage import SqlStorage
from adapters.storage.archive_repo import SqlArchiveRepository
from engine.errors import EngineError
from engine.formats.archive import archive_to_bytes, parse_archive
from engine.ports import ToolCall
from engine.turns import tool_builtins as tb
from engine.turns import tools as t
from engine.turns.api import MAIN_BRANCH, SessionKey
from engine.turns.service import TavernService
from engine.variables.values import VariableState, VariableValueError
from tests.test_turns.conftest import KEY, line

NOW = datetime(2026, 1, 1, tzinfo=UTC)
OVERFLOW = (
    "{{setvar::m::1e308}}{{addvar::m::1e308}}"
    "{{setglobalvar::g::1e308}}{{addglobalvar::g::1e308}}{{setvar::ok::1}}"
)


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, {"a": [1, math.nan]}])
async def test_vars_set_refuses_a_non_finite_number(service: TavernService, value: Any) -> None:
    await service.set_variable(KEY, MAIN_BRANCH, "m", 5)
    for scope in ("chat", "branch", "global"):
        with pytest.raises(VariableValueError) as info:
            await service.set_variable(KEY, MAIN_BRANCH, "m", value, scope)  # type: ignore[arg-type]
        assert isinstance(info.value, EngineError)  # front ends show its one line
        assert "'m'" in str(info.value) and "finite" in str(info.value)
    assert await service.variables(KEY, MAIN_BRANCH, "chat") == {"m": 5}
    assert await service.variables(KEY, MAIN_BRANCH, "global") == {}


@pytest.mark.parametrize("raw", ['{"name": "m", "value": 1e999}', '{"name": "m", "value": NaN}'])
async def test_the_set_variable_tool_refuses_a_non_finite_number(raw: str) -> None:
    env = tb.ToolEnv(
        state=VariableState(branch={"m": 1}),
        staged=[],
        card={},
        clock=None,  # type: ignore[arg-type]
        random=None,  # type: ignore[arg-type]
    )
    tools = t.ToolBox(t.ToolPolicy(enabled=True), env)
    record = await tools.call(
        "narrator", ToolCall(id="c1", name="set_variable", arguments=raw), step=1
    )
    assert record.status == "error"
    assert "finite" in record.result
    assert env.staged == []


async def test_an_overflowing_macro_leaves_valid_json_and_an_archive_that_reads_back(
    service: TavernService, storage: SqlStorage, tmp_path: Path
) -> None:
    card = {"spec": "chara_card_v2", "data": {"name": "Mira", "description": OVERFLOW}}
    await service.import_asset(KEY, "card", "mira.json", json.dumps(card).encode())
    first = await service.respond(KEY, MAIN_BRANCH, [line("hi")])
    second = await service.respond(KEY, MAIN_BRANCH, [line("again")])  # later turns still work
    assert (first.floor, second.floor) == (1, 2)
    local = await service.variables(KEY, MAIN_BRANCH)
    assert local["m"] == "1e308" and local["ok"] == "1"
    assert (await service.variables(KEY, MAIN_BRANCH, "global"))["g"] == "1e308"
    json.dumps(local, allow_nan=False)  # what /vars prints is valid JSON
    with sqlite3.connect(tmp_path / "turns.db") as db:
        stored = db.execute(
            "SELECT value FROM variable_value UNION ALL SELECT value FROM variable_log"
        ).fetchall()
    assert stored
    for (text,) in stored:
        json.loads(text, parse_constant=lambda c: pytest.fail(f"stored {c}"))
    archive = await SqlArchiveRepository(storage).export_session("console", KEY.key, now=NOW)
    parsed = parse_archive(archive_to_bytes(archive), source="mira.tavern.json")
    copy = SessionKey(platform="console", realm="local", key="copy")
    await SqlArchiveRepository(storage).import_session(
        parsed, platform="console", realm_key="local", key=copy.key
    )
    assert (await service.variables(copy, MAIN_BRANCH))["m"] == "1e308"
