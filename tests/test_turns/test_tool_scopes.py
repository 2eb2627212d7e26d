"""The model's tools (issue 12): global writes only where a game master allowed them, tool
reads see the page's macro writes, and past MAX_WRITES_PER_PAGE writes are refused while the
turn still commits."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.errors import ConfigurationError
from engine.ports import ToolCall
from engine.turns import tool_builtins as tb
from engine.turns import tools as t
from engine.turns.api import MAIN_BRANCH
from engine.turns.service import TavernService
from engine.variables.values import MAX_WRITES_PER_PAGE, Mutation, VariableState
from tests.fakes.openai_server import FakeOpenAIServer, FakeReply, FakeToolCall
from tests.test_turns.conftest import KEY, line
from tests.test_turns.test_tools_unit import FixedClock, Sequence

pytestmark = pytest.mark.timeout(120)


def box(policy: t.ToolPolicy, staged: list[Mutation] | None = None) -> t.ToolBox:
    env = tb.ToolEnv(
        state=VariableState(),
        staged=staged if staged is not None else [],
        card={},
        clock=FixedClock(),
        random=Sequence(),
    )
    return t.ToolBox(policy, env)


def set_call(name: str, value: object, scope: str | None = None) -> ToolCall:
    args: dict[str, object] = {"name": name, "value": value}
    if scope is not None:
        args["scope"] = scope
    return ToolCall(id=f"c-{name}", name="set_variable", arguments=json.dumps(args))


def tool_reply(tool: str, **args: object) -> FakeReply:
    return FakeReply(tool_calls=[FakeToolCall(name=tool, arguments=json.dumps(args))])


# ---------------------------------------------------------------------- the engine


async def test_global_writes_are_denied_unless_allowed() -> None:
    tools = box(t.ToolPolicy(enabled=True))
    for scope in t.TOOL_WRITE_SCOPES:
        done = await tools.call("narrator", set_call(f"in_{scope}", 1, scope), step=1)
        assert done.status == "ok", done.result
    denied = await tools.call("narrator", set_call("admin", 1, "global"), step=1)
    assert denied.status == "denied"
    assert json.loads(denied.result) == {"error": t.GLOBAL_WRITES_REFUSED}
    assert [m.scope for m in tools.env.staged] == list(t.TOOL_WRITE_SCOPES)

    allowed = box(t.ToolPolicy(enabled=True, allow_global=True))
    done = await allowed.call("narrator", set_call("admin", 1, "global"), step=1)
    assert done.status == "ok" and allowed.env.staged == [Mutation.set("global", "admin", 1)]


def test_the_session_setting_is_read_apart_from_the_tools_json() -> None:
    # Whatever the tools JSON says, only the game master's switch allows global writes.
    sneaky = {"enabled": True, "allow_global": True}
    assert not t.ToolPolicy.from_json(sneaky, default_enabled=False).allow_global
    assert t.ToolPolicy.from_json(sneaky, default_enabled=False, allow_global=True).allow_global
    assert "global" not in t.ToolPolicy().write_scopes


async def test_past_max_writes_per_page_a_tool_write_is_an_error() -> None:
    full = [Mutation.set("branch", "k", i) for i in range(MAX_WRITES_PER_PAGE)]
    tools = box(t.ToolPolicy(enabled=True), staged=full)
    refused = await tools.call("narrator", set_call("one_more", 1), step=1)
    assert refused.status == "error" and "MAX_WRITES_PER_PAGE" in refused.result
    assert len(tools.env.staged) == MAX_WRITES_PER_PAGE


# ---------------------------------------------------------------------- through the service


async def _last_meta(service: TavernService) -> dict[str, Any]:
    async with service.storage.unit_of_work() as uow:
        floor = await uow.floors.latest((await service.parts.sessions.branch(1, MAIN_BRANCH)).id)
        assert floor is not None and floor.state == "committed"
        pages = await uow.pages.of_floors([floor.id])
    return dict(pages[-1].meta)


def _preset(*contents: str) -> bytes:
    prompts = [
        {"identifier": f"p{i}", "name": f"P{i}", "content": text}
        for i, text in enumerate(contents)
    ]
    order = [{"identifier": p["identifier"], "enabled": True} for p in prompts]
    order.append({"identifier": "chatHistory", "enabled": True})
    return json.dumps(
        {"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": order}]}
    ).encode()


async def test_a_turn_cannot_write_global_until_a_game_master_allows_it(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    await remote.configure(KEY, tools={"enabled": True})
    assert not await remote.tools_global_writes(KEY)
    fake.script(
        tool_reply("set_variable", name="admin", value=1, scope="global"), FakeReply(text="ok")
    )
    await remote.respond(KEY, MAIN_BRANCH, [line("make me admin")])
    assert "admin" not in await remote.variables(KEY, MAIN_BRANCH, "global")
    told = fake.chat_requests[1].messages[-1]
    assert told["role"] == "tool" and t.GLOBAL_WRITES_REFUSED in told["content"]
    records = (await _last_meta(remote))["tool_records"]
    assert [r["status"] for r in records] == ["denied"]

    await remote.set_tools_global_writes(KEY, True)
    assert await remote.tools_global_writes(KEY)
    fake.script(
        tool_reply("set_variable", name="admin", value=1, scope="global"), FakeReply(text="ok")
    )
    await remote.respond(KEY, MAIN_BRANCH, [line("again")])
    assert (await remote.variables(KEY, MAIN_BRANCH, "global"))["admin"] == 1


async def test_tool_reads_see_the_page_macro_writes(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    await remote.configure(KEY, tools={"enabled": True})
    await remote.import_asset(KEY, "preset", "p.json", _preset("{{setvar::hp::5}}Play."))
    fake.script(tool_reply("get_variable", name="hp"), FakeReply(text="ok"))
    await remote.respond(KEY, MAIN_BRANCH, [line("how am I?")])
    told = fake.chat_requests[1].messages[-1]
    assert told["role"] == "tool" and json.loads(told["content"]) == {"found": True, "value": "5"}
    assert (await remote.variables(KEY, MAIN_BRANCH))["hp"] == "5"


async def test_past_the_page_write_cap_writes_are_refused_and_the_turn_commits(
    remote: TavernService, fake: FakeOpenAIServer
) -> None:
    await remote.configure(KEY, tools={"enabled": True})
    # Two preset prompts of 6,000 writes each: each evaluation is under its own limit, the
    # page together is over MAX_WRITES_PER_PAGE.
    half = "{{setvar::a::1}}" * 6_000
    await remote.import_asset(KEY, "preset", "p.json", _preset(half + "One.", half + "Two."))
    fake.script(tool_reply("set_variable", name="late", value=1), FakeReply(text="Still here."))
    reply = await remote.respond(KEY, MAIN_BRANCH, [line("go")])
    assert reply.text == "Still here."
    found = await remote.variables(KEY, MAIN_BRANCH)
    assert found["a"] == "1" and "late" not in found
    meta = await _last_meta(remote)
    [record] = meta["tool_records"]
    assert record["status"] == "error" and "MAX_WRITES_PER_PAGE" in record["result"]
    assert any("MAX_WRITES_PER_PAGE" in w["message"] for w in meta["macro_warnings"])


def test_the_model_is_offered_only_the_scopes_it_may_write() -> None:
    def scopes(policy: t.ToolPolicy) -> list[str]:
        [spec] = [s for s in box(policy).specs("narrator") if s.name == "set_variable"]
        return list(spec.parameters["properties"]["scope"]["enum"])

    assert scopes(t.ToolPolicy(enabled=True)) == list(t.TOOL_WRITE_SCOPES)
    assert scopes(t.ToolPolicy(enabled=True, allow_global=True))[-1] == "global"
    # get_variable still reads every scope.
    [getter] = [
        s for s in box(t.ToolPolicy(enabled=True)).specs("narrator") if s.name == "get_variable"
    ]
    assert "global" in getter.parameters["properties"]["scope"]["enum"]


async def test_the_switch_takes_only_true_or_false(service: TavernService) -> None:
    with pytest.raises(ConfigurationError, match="tools_global_writes must be true or false"):
        await service.configure(KEY, **{t.TOOLS_GLOBAL_WRITES: "yes"})
    assert not await service.tools_global_writes(KEY)
