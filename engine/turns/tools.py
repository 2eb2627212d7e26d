"""Built-in tools offered to the model through OpenAI tool calling (seed 003 section 11).

Seven tools (:mod:`engine.turns.tool_builtins`): ``get_variable``, ``set_variable``,
``roll_dice``, ``random_choice``, ``current_time``, ``query_memory`` and ``character_info``.
Each has a side-effect level:

- ``none``: reads only (every built-in tool but ``set_variable``);
- ``sandbox``: writes go to the generating page's staged log, so they are kept only if the page
  commits (a failed turn or another page of a regenerate never sees them);
- ``irreversible``: an outside effect that cannot be rolled back; no built-in tool has one, and
  a tool that does is neither offered nor run unless the policy's ``allow_irreversible`` is set.

A :class:`ToolBox` serves one turn. Tools are off unless the session's ``tools`` option turns
them on (many OpenAI-compatible servers refuse tool definitions); then the session's
:class:`ToolPolicy` decides which slot may call which tool (allow and deny lists per slot), how
many calls a turn may make (``max_calls_per_turn``), how many tool rounds one generation may
take (``max_steps``) and which scopes the model may write: page, floor, branch and chat, and
``global`` (the realm, which every session of a Discord server or Telegram chat shares) only
where a game master allowed it for the session (the :data:`TOOLS_GLOBAL_WRITES` setting).
Every call, allowed or not, leaves a :class:`ToolRecord`; the records of a page are kept in its
meta (``tool_records``).

Tools share the page's staged log with its macros: a tool reads what the page's macros wrote,
and past :data:`~engine.variables.values.MAX_WRITES_PER_PAGE` writes a further write is refused
with a tool error (the turn still commits).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from engine.ports import ToolCall, ToolSpec
from engine.turns.tool_builtins import (
    BUILTIN_TOOLS,
    SCOPE_PROPERTY,
    SideEffect,
    Tool,
    ToolArgumentError,
    ToolEnv,
)
from engine.variables.values import SCOPES, Scope

RecordStatus = Literal["ok", "denied", "error"]

DEFAULT_MAX_STEPS: Final = 5
"""Tool rounds one generation may take before the model must answer in text."""
DEFAULT_MAX_CALLS_PER_TURN: Final = 16
"""Tool calls one turn may make (all slots together); later calls are refused."""
MAX_STEPS_LIMIT: Final = 50
MAX_CALLS_LIMIT: Final = 500
MAX_ARGUMENT_CHARS: Final = 16_000
"""Raw JSON arguments longer than this are refused without parsing."""
MAX_RESULT_CHARS: Final = 4_000
"""A tool result sent back to the model is cut to this length."""
TOOL_WRITE_SCOPES: Final[tuple[Scope, ...]] = ("page", "floor", "branch", "chat")
"""The scopes the model may write by default; ``global`` needs :data:`TOOLS_GLOBAL_WRITES`."""
TOOLS_GLOBAL_WRITES: Final = "tools_global_writes"
"""Session setting (true/false, set by a game master): the model's tools may write the realm's
global variables, which other sessions of the realm see."""
GLOBAL_WRITES_REFUSED: Final = (
    "scope 'global' is refused: this session's tools may write page, floor, branch and chat "
    "(a game master can allow global writes)"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolPolicy:
    """What a session lets the model call. ``allow`` per slot (None: every tool), ``deny``
    per slot (wins over ``allow``); ``"*"`` as a slot applies to every slot."""

    enabled: bool = False
    allow: Mapping[str, tuple[str, ...]] | None = None
    deny: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    max_calls_per_turn: int = DEFAULT_MAX_CALLS_PER_TURN
    max_steps: int = DEFAULT_MAX_STEPS
    allow_irreversible: bool = False
    allow_global: bool = False
    """Whether tools may write the realm's ``global`` scope (:data:`TOOLS_GLOBAL_WRITES`)."""

    def __post_init__(self) -> None:
        if not 0 <= self.max_steps <= MAX_STEPS_LIMIT:
            raise ValueError(f"tools.max_steps must be 0..{MAX_STEPS_LIMIT}, got {self.max_steps}")
        if not 0 <= self.max_calls_per_turn <= MAX_CALLS_LIMIT:
            raise ValueError(
                f"tools.max_calls_per_turn must be 0..{MAX_CALLS_LIMIT}, "
                f"got {self.max_calls_per_turn}"
            )

    @classmethod
    def from_json(
        cls, data: object, *, default_enabled: bool, allow_global: bool = False
    ) -> ToolPolicy:
        """Read the session's ``tools`` setting (missing keys take the defaults);
        ``allow_global`` is the session's :data:`TOOLS_GLOBAL_WRITES` setting, kept apart from
        ``tools`` so that only the game master's switch turns it on."""
        if not isinstance(data, Mapping):
            return cls(enabled=default_enabled, allow_global=allow_global)

        def lists(value: object) -> dict[str, tuple[str, ...]]:
            if not isinstance(value, Mapping):
                return {}
            return {str(k): tuple(str(n) for n in v) for k, v in value.items() if _is_list(v)}

        allow = data.get("allow")
        return cls(
            enabled=bool(data.get("enabled", default_enabled)),
            allow=lists(allow) if isinstance(allow, Mapping) else None,
            deny=lists(data.get("deny")),
            max_calls_per_turn=int(data.get("max_calls_per_turn", DEFAULT_MAX_CALLS_PER_TURN)),
            max_steps=int(data.get("max_steps", DEFAULT_MAX_STEPS)),
            allow_irreversible=bool(data.get("allow_irreversible", False)),
            allow_global=allow_global,
        )

    @property
    def write_scopes(self) -> tuple[Scope, ...]:
        """The scopes the model's tools may write."""
        return (*TOOL_WRITE_SCOPES, "global") if self.allow_global else TOOL_WRITE_SCOPES

    def permits(self, slot: str, tool: str) -> bool:
        """Whether ``slot`` may call ``tool`` by the allow and deny lists."""
        denied = (*self.deny.get(slot, ()), *self.deny.get("*", ()))
        if tool in denied:
            return False
        if self.allow is None:
            return True
        return tool in (*self.allow.get(slot, ()), *self.allow.get("*", ()))


def _is_list(value: object) -> bool:
    return isinstance(value, list | tuple)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRecord:
    """One tool call as it is kept in its page's meta (``tool_records``)."""

    call_id: str
    slot: str
    step: int
    name: str
    arguments: str
    status: RecordStatus
    side_effect: SideEffect
    result: str

    def to_json(self) -> dict[str, Any]:
        """Plain JSON for the page's meta."""
        return {
            "call_id": self.call_id,
            "slot": self.slot,
            "step": self.step,
            "name": self.name,
            "arguments": self.arguments,
            "status": self.status,
            "side_effect": self.side_effect,
            "result": self.result,
        }


class ToolBox:
    """The tools of one turn: offers them per slot, runs calls, keeps the records."""

    def __init__(
        self, policy: ToolPolicy, env: ToolEnv, tools: Sequence[Tool] = BUILTIN_TOOLS
    ) -> None:
        self.policy = policy
        self.env = env
        self._tools = {tool.spec.name: tool for tool in tools}
        self.records: list[ToolRecord] = []

    @property
    def calls(self) -> int:
        """Calls made this turn (denied ones included)."""
        return len(self.records)

    def specs(self, slot: str) -> tuple[ToolSpec, ...]:
        """What ``slot`` is offered (nothing when tools are off for the session)."""
        if not self.policy.enabled or self.policy.max_steps == 0:
            return ()
        return tuple(
            self._offered(tool)
            for tool in self._tools.values()
            if self.policy.permits(slot, tool.spec.name)
            and (tool.side_effect != "irreversible" or self.policy.allow_irreversible)
        )

    def _offered(self, tool: Tool) -> ToolSpec:
        """The tool's spec, its ``scope`` choices cut to the scopes the policy lets it write
        (so the model is not offered ``global`` where a write there would be refused)."""
        if not tool.writes_scope or "global" in self.policy.write_scopes:
            return tool.spec
        params = dict(tool.spec.parameters)
        properties = dict(params.get("properties", {}))
        properties["scope"] = {**SCOPE_PROPERTY, "enum": list(self.policy.write_scopes)}
        params["properties"] = properties
        return replace(tool.spec, parameters=params)

    async def call(self, slot: str, call: ToolCall, *, step: int) -> ToolRecord:
        """Run one call (or refuse it) and record it; the record's ``result`` is what the
        model is told."""
        tool = self._tools.get(call.name)
        side: SideEffect = tool.side_effect if tool is not None else "none"
        denial = self._denial(slot, call, tool)
        if denial is not None:
            return self._record(call, slot, step, "denied", side, {"error": denial})
        assert tool is not None
        try:
            args = json.loads(call.arguments or "{}")
            if not isinstance(args, dict):
                raise ToolArgumentError("arguments must be a JSON object")
            scope = args.get("scope")
            if tool.writes_scope and scope in SCOPES and scope not in self.policy.write_scopes:
                refusal = {"error": GLOBAL_WRITES_REFUSED}
                return self._record(call, slot, step, "denied", side, refusal)
            result = await tool.handler(self.env, args)
        except (ToolArgumentError, ValueError) as exc:
            return self._record(call, slot, step, "error", side, {"error": str(exc)})
        return self._record(call, slot, step, "ok", side, result)

    def _denial(self, slot: str, call: ToolCall, tool: Tool | None) -> str | None:
        if tool is None:
            return f"unknown tool {call.name!r}"
        if not self.policy.enabled:
            return "tools are turned off for this session"
        if self.calls >= self.policy.max_calls_per_turn:
            return f"tool call limit reached (max_calls_per_turn={self.policy.max_calls_per_turn})"
        if not self.policy.permits(slot, call.name):
            return f"tool {call.name!r} is not allowed for the {slot} slot"
        if tool.side_effect == "irreversible" and not self.policy.allow_irreversible:
            return f"tool {call.name!r} has irreversible effects, which this session refuses"
        if len(call.arguments) > MAX_ARGUMENT_CHARS:
            return f"arguments longer than MAX_ARGUMENT_CHARS={MAX_ARGUMENT_CHARS}"
        return None

    def _record(
        self,
        call: ToolCall,
        slot: str,
        step: int,
        status: RecordStatus,
        side: SideEffect,
        result: Any,
    ) -> ToolRecord:
        text = json.dumps(result, ensure_ascii=False, default=str)
        if len(text) > MAX_RESULT_CHARS:
            text = text[:MAX_RESULT_CHARS]
        record = ToolRecord(
            call_id=call.id,
            slot=slot,
            step=step,
            name=call.name,
            arguments=call.arguments[:MAX_ARGUMENT_CHARS],
            status=status,
            side_effect=side,
            result=text,
        )
        self.records.append(record)
        return record
