"""The built-in tools and the tool policy, without a model: every named limit."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from engine.ports import ToolCall, ToolSpec
from engine.turns import tool_builtins as tb
from engine.turns import tools as t
from engine.variables.values import Mutation, VariableState


class FixedClock:
    def now(self) -> datetime:
        return datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


class Sequence:
    """Randomness that returns the given values in turn."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0) if self.values else 0.0


def box(policy: t.ToolPolicy | None = None, *randoms: float) -> t.ToolBox:
    env = tb.ToolEnv(
        state=VariableState(branch={"hp": 10}, chat={"hp": 3, "place": "inn"}),
        staged=[],
        card={"name": "Mira", "description": "a fox"},
        clock=FixedClock(),
        random=Sequence(*randoms),
    )
    return t.ToolBox(policy or t.ToolPolicy(enabled=True), env)


def call(tool: str, **args: object) -> ToolCall:
    return ToolCall(id=f"c-{tool}", name=tool, arguments=json.dumps(args))


async def test_get_and_set_variable_read_through_the_staged_log() -> None:
    tools = box()
    got = await tools.call("narrator", call("get_variable", name="hp"), step=1)
    assert json.loads(got.result) == {"found": True, "value": 10}
    chat = await tools.call("narrator", call("get_variable", name="hp", scope="chat"), step=1)
    assert json.loads(chat.result)["value"] == 3
    written = await tools.call("narrator", call("set_variable", name="hp", value=7), step=1)
    assert written.side_effect == "sandbox" and written.status == "ok"
    assert tools.env.staged == [Mutation.set(tb.DEFAULT_TOOL_SCOPE, "hp", 7)]
    again = await tools.call("narrator", call("get_variable", name="hp"), step=2)
    assert json.loads(again.result)["value"] == 7
    bad = await tools.call("narrator", call("set_variable", name="hp", value=1, scope="x"), step=2)
    assert bad.status == "error" and "scope" in bad.result


def test_dice() -> None:
    assert tb.roll("2d6+3", Sequence(0.0, 0.99)) == {
        "formula": "2d6+3",
        "rolls": [1, 6],
        "total": 10,
    }
    assert tb.roll("d20 - 1d4", Sequence(0.5, 0.0))["total"] == 11 - 1
    for bad in ("", "2x6", "d0", "1d6++2", f"{tb.MAX_DICE + 1}d6", f"1d{tb.MAX_SIDES + 1}"):
        with pytest.raises(tb.ToolArgumentError):
            tb.roll(bad, Sequence())
    assert len(tb.roll(f"{tb.MAX_DICE}d6", Sequence())["rolls"]) == tb.MAX_DICE


async def test_other_tools() -> None:
    tools = box(None, 0.6)
    choice = await tools.call("narrator", call("random_choice", options=["a", "b"]), step=1)
    assert json.loads(choice.result) == {"choice": "b"}
    too_many = list(range(tb.MAX_CHOICES + 1))
    refused = await tools.call("narrator", call("random_choice", options=too_many), step=1)
    assert refused.status == "error"
    now = await tools.call("narrator", call("current_time"), step=1)
    assert json.loads(now.result)["iso"].startswith("2026-01-02T03:04:05")
    memory = await tools.call("narrator", call("query_memory", query="fox"), step=1)
    assert json.loads(memory.result)["note"] == "no memory yet"
    info = await tools.call("narrator", call("character_info", field="description"), step=1)
    assert json.loads(info.result) == {"description": "a fox"}
    whole = await tools.call("narrator", call("character_info"), step=1)
    assert set(json.loads(whole.result)) == set(tb.CARD_FIELDS)


async def test_policy_allow_deny_irreversible_and_limits() -> None:
    policy = t.ToolPolicy(
        enabled=True,
        allow={"narrator": ("roll_dice", "get_variable")},
        deny={"*": ("get_variable",)},
        max_calls_per_turn=3,
    )
    tools = box(policy)
    assert [s.name for s in tools.specs("narrator")] == ["roll_dice"]
    assert tools.specs("director") == ()
    denied = await tools.call("narrator", call("get_variable", name="hp"), step=1)
    assert denied.status == "denied" and "not allowed" in denied.result
    unknown = await tools.call("narrator", call("launch_rocket"), step=1)
    assert unknown.status == "denied"
    ok = await tools.call("narrator", call("roll_dice", formula="1d6"), step=1)
    assert ok.status == "ok"
    over = await tools.call("narrator", call("roll_dice", formula="1d6"), step=1)
    assert over.status == "denied" and "max_calls_per_turn=3" in over.result
    assert tools.calls == 4


async def test_irreversible_tools_need_permission() -> None:
    async def launch(env: tb.ToolEnv, args: object) -> object:
        return {"launched": True}

    rocket = tb.Tool(
        spec=ToolSpec(name="launch", description="", parameters={}),
        side_effect="irreversible",
        handler=launch,  # type: ignore[arg-type]
    )
    env = box().env
    refused = t.ToolBox(t.ToolPolicy(enabled=True), env, [rocket])
    assert refused.specs("narrator") == ()
    assert (await refused.call("narrator", call("launch"), step=1)).status == "denied"
    allowed = t.ToolBox(t.ToolPolicy(enabled=True, allow_irreversible=True), env, [rocket])
    assert (await allowed.call("narrator", call("launch"), step=1)).status == "ok"


async def test_argument_and_result_sizes_are_bounded() -> None:
    tools = box()
    huge = ToolCall(id="x", name="get_variable", arguments="{" + " " * t.MAX_ARGUMENT_CHARS + "}")
    assert (await tools.call("narrator", huge, step=1)).status == "denied"
    value = "v" * (t.MAX_RESULT_CHARS * 2)
    record = await tools.call("narrator", call("set_variable", name="big", value=value), step=1)
    assert len(record.result) == t.MAX_RESULT_CHARS
    broken = ToolCall(id="y", name="roll_dice", arguments="not json")
    assert (await tools.call("narrator", broken, step=1)).status == "error"


def test_policy_bounds_and_json() -> None:
    with pytest.raises(ValueError, match="max_steps"):
        t.ToolPolicy(max_steps=t.MAX_STEPS_LIMIT + 1)
    with pytest.raises(ValueError, match="max_calls_per_turn"):
        t.ToolPolicy(max_calls_per_turn=t.MAX_CALLS_LIMIT + 1)
    assert t.ToolPolicy.from_json(None, default_enabled=True).enabled
    read = t.ToolPolicy.from_json(
        {"enabled": True, "deny": {"narrator": ["roll_dice"]}, "max_steps": 2},
        default_enabled=False,
    )
    assert read.max_steps == 2 and not read.permits("narrator", "roll_dice")
    assert t.ToolPolicy().max_steps == t.DEFAULT_MAX_STEPS == 5
    assert box(t.ToolPolicy(enabled=False)).specs("narrator") == ()
