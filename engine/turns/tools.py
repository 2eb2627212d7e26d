"""Built-in tools offered to the model through OpenAI tool calling (seed 003 section 11).

Seven tools: ``get_variable``, ``set_variable``, ``roll_dice``, ``random_choice``,
``current_time``, ``query_memory`` and ``character_info``. Each has a side-effect level:

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
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from engine.ports import Clock, RandomSource, ToolCall, ToolSpec
from engine.variables.fold import fold
from engine.variables.values import (
    MAX_KEY_LENGTH,
    MAX_WRITES_PER_PAGE,
    SCOPES,
    Mutation,
    Scope,
    VariableState,
)

SideEffect = Literal["none", "sandbox", "irreversible"]
RecordStatus = Literal["ok", "denied", "error"]

DEFAULT_MAX_STEPS: Final = 5
"""Tool rounds one generation may take before the model must answer in text."""
DEFAULT_MAX_CALLS_PER_TURN: Final = 16
"""Tool calls one turn may make (all slots together); later calls are refused."""
MAX_STEPS_LIMIT: Final = 50
MAX_CALLS_LIMIT: Final = 500
MAX_DICE: Final = 100
"""Dice one ``roll_dice`` formula may throw."""
MAX_SIDES: Final = 10_000
MAX_CHOICES: Final = 200
MAX_ARGUMENT_CHARS: Final = 16_000
"""Raw JSON arguments longer than this are refused without parsing."""
MAX_RESULT_CHARS: Final = 4_000
"""A tool result sent back to the model is cut to this length."""
DEFAULT_TOOL_SCOPE: Final[Scope] = "branch"
"""Where ``set_variable`` writes without a scope: the branch, like a SillyTavern local write."""
TOOL_WRITE_SCOPES: Final[tuple[Scope, ...]] = ("page", "floor", "branch", "chat")
"""The scopes the model may write by default; ``global`` needs :data:`TOOLS_GLOBAL_WRITES`."""
TOOLS_GLOBAL_WRITES: Final = "tools_global_writes"
"""Session setting (true/false, set by a game master): the model's tools may write the realm's
global variables, which other sessions of the realm see."""
GLOBAL_WRITES_REFUSED: Final = (
    "scope 'global' is refused: this session's tools may write page, floor, branch and chat "
    "(a game master can allow global writes)"
)

CARD_FIELDS: Final = (
    "name",
    "description",
    "personality",
    "scenario",
    "mes_example",
    "system_prompt",
    "post_history_instructions",
    "creator_notes",
)


class ToolArgumentError(ValueError):
    """The model's arguments do not fit the tool (reported back to the model, not raised)."""


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
    """One tool call as it is kept with the floor (``tool_execution_record``)."""

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


MemoryQuery = Callable[[str, int], Awaitable[Sequence[str]]]


@dataclass(slots=True, kw_only=True)
class ToolEnv:
    """What the tools of one turn work on: the page's starting variable state and its staged
    log (the page's macro writes first, then the tools'), the card, the clock and randomness."""

    state: VariableState
    staged: list[Mutation]
    card: Mapping[str, str]
    clock: Clock
    random: RandomSource
    memory: MemoryQuery | None = None

    def read(self, name: str, scope: Scope | None) -> tuple[bool, Any]:
        """``(found, value)`` of ``name`` as the page sees it now (staged writes included)."""
        for current in (scope,) if scope is not None else SCOPES:
            values = fold(self.staged, current, self.state.scope(current))
            if name in values:
                return True, values[name]
        return False, None


Handler = Callable[[ToolEnv, Mapping[str, Any]], Awaitable[Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool:
    """A tool: what the model is told, its side-effect level and its handler. ``writes_scope``:
    the tool writes the scope its ``scope`` argument names (checked against the policy's
    :attr:`ToolPolicy.write_scopes` before it runs; a refusal is recorded as ``denied``)."""

    spec: ToolSpec
    side_effect: SideEffect
    handler: Handler
    writes_scope: bool = False


def _scope_arg(args: Mapping[str, Any], default: Scope | None) -> Scope | None:
    scope = args.get("scope")
    if scope is None or scope == "":
        return default
    if scope not in SCOPES:
        raise ToolArgumentError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    return scope  # type: ignore[no-any-return]


def _name_arg(args: Mapping[str, Any]) -> str:
    name = args.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_KEY_LENGTH:
        raise ToolArgumentError(f"name must be a text of 1..{MAX_KEY_LENGTH} characters")
    return name


async def _get_variable(env: ToolEnv, args: Mapping[str, Any]) -> Any:
    found, value = env.read(_name_arg(args), _scope_arg(args, None))
    return {"found": found, "value": value}


async def _set_variable(env: ToolEnv, args: Mapping[str, Any]) -> Any:
    name = _name_arg(args)
    scope = _scope_arg(args, DEFAULT_TOOL_SCOPE)
    assert scope is not None
    if "value" not in args:
        raise ToolArgumentError("value is required")
    if len(env.staged) >= MAX_WRITES_PER_PAGE:
        raise ToolArgumentError(
            f"write to {name!r} refused: this reply already staged {len(env.staged)} variable "
            f"writes (MAX_WRITES_PER_PAGE={MAX_WRITES_PER_PAGE})"
        )
    env.staged.append(Mutation.set(scope, name, args["value"]))
    return {"ok": True, "scope": scope, "name": name, "value": args["value"]}


_DICE_TERM = re.compile(r"([+-]?)\s*(?:(\d*)d(\d+)|(\d+))", re.IGNORECASE)


def roll(formula: str, random: RandomSource) -> dict[str, Any]:
    """Roll ``formula`` such as ``2d6+3`` or ``d20 - 1d4``; raises ToolArgumentError."""
    text = formula.replace(" ", "")
    if not text or len(text) > 100:
        raise ToolArgumentError("formula must be like 2d6+3 (at most 100 characters)")
    pos, total, dice, rolls = 0, 0, 0, []
    for match in _DICE_TERM.finditer(text):
        if match.start() != pos or (pos and not match.group(1)):
            raise ToolArgumentError(f"cannot read dice formula {formula!r}")
        pos = match.end()
        sign = -1 if match.group(1) == "-" else 1
        if match.group(4) is not None:
            total += sign * int(match.group(4))
            continue
        count = int(match.group(2) or 1)
        sides = int(match.group(3))
        dice += count
        if not 1 <= sides <= MAX_SIDES or dice > MAX_DICE or count < 1:
            raise ToolArgumentError(f"at most {MAX_DICE} dice of 1..{MAX_SIDES} sides per formula")
        for _ in range(count):
            value = int(random.random() * sides) + 1
            rolls.append(sign * value)
            total += sign * value
    if pos != len(text):
        raise ToolArgumentError(f"cannot read dice formula {formula!r}")
    return {"formula": formula, "rolls": rolls, "total": total}


async def _roll_dice(env: ToolEnv, args: Mapping[str, Any]) -> Any:
    formula = args.get("formula")
    if not isinstance(formula, str):
        raise ToolArgumentError("formula must be a text such as 2d6+3")
    return roll(formula, env.random)


async def _random_choice(env: ToolEnv, args: Mapping[str, Any]) -> Any:
    options = args.get("options")
    if not isinstance(options, list) or not options or len(options) > MAX_CHOICES:
        raise ToolArgumentError(f"options must be a list of 1..{MAX_CHOICES} items")
    return {"choice": options[int(env.random.random() * len(options))]}


async def _current_time(env: ToolEnv, args: Mapping[str, Any]) -> Any:
    now = env.clock.now()
    return {"iso": now.isoformat(), "weekday": now.strftime("%A")}


async def _query_memory(env: ToolEnv, args: Mapping[str, Any]) -> Any:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolArgumentError("query must be a non-empty text")
    limit = args.get("limit", 5)
    if not isinstance(limit, int) or not 1 <= limit <= 20:
        raise ToolArgumentError("limit must be a number 1..20")
    if env.memory is None:
        return {"items": [], "note": "no memory yet"}
    return {"items": list(await env.memory(query, limit))}


async def _character_info(env: ToolEnv, args: Mapping[str, Any]) -> Any:
    name = args.get("field")
    if name in (None, ""):
        return {k: env.card.get(k, "") for k in CARD_FIELDS}
    if name not in CARD_FIELDS:
        raise ToolArgumentError(f"field must be one of {', '.join(CARD_FIELDS)}")
    return {name: env.card.get(str(name), "")}


def _schema(properties: Mapping[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties), "required": list(required)}


_SCOPE_PROP = {"type": "string", "enum": list(SCOPES), "description": "variable scope"}

BUILTIN_TOOLS: Final[tuple[Tool, ...]] = (
    Tool(
        spec=ToolSpec(
            name="get_variable",
            description="Read a chat variable (narrowest scope first unless scope is given).",
            parameters=_schema({"name": {"type": "string"}, "scope": _SCOPE_PROP}, ["name"]),
        ),
        side_effect="none",
        handler=_get_variable,
    ),
    Tool(
        spec=ToolSpec(
            name="set_variable",
            description="Set a chat variable; kept only if this reply is committed.",
            parameters=_schema(
                {"name": {"type": "string"}, "value": {}, "scope": _SCOPE_PROP}, ["name", "value"]
            ),
        ),
        side_effect="sandbox",
        handler=_set_variable,
        writes_scope=True,
    ),
    Tool(
        spec=ToolSpec(
            name="roll_dice",
            description="Roll dice, e.g. 2d6+3.",
            parameters=_schema({"formula": {"type": "string"}}, ["formula"]),
        ),
        side_effect="none",
        handler=_roll_dice,
    ),
    Tool(
        spec=ToolSpec(
            name="random_choice",
            description="Pick one of the options at random.",
            parameters=_schema({"options": {"type": "array", "items": {}}}, ["options"]),
        ),
        side_effect="none",
        handler=_random_choice,
    ),
    Tool(
        spec=ToolSpec(
            name="current_time", description="The current date and time.", parameters=_schema({})
        ),
        side_effect="none",
        handler=_current_time,
    ),
    Tool(
        spec=ToolSpec(
            name="query_memory",
            description="Search the long-term memory of this chat.",
            parameters=_schema(
                {"query": {"type": "string"}, "limit": {"type": "integer"}}, ["query"]
            ),
        ),
        side_effect="none",
        handler=_query_memory,
    ),
    Tool(
        spec=ToolSpec(
            name="character_info",
            description="Read the character card (one field, or all of them).",
            parameters=_schema({"field": {"type": "string", "enum": list(CARD_FIELDS)}}),
        ),
        side_effect="none",
        handler=_character_info,
    ),
)


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
        properties["scope"] = {**_SCOPE_PROP, "enum": list(self.policy.write_scopes)}
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
