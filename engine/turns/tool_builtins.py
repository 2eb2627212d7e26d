"""The built-in tools (seed 003 section 11) and what a tool is: :class:`Tool` (what the model
is told, its side-effect level, its handler) and :class:`ToolEnv` (what the tools of one turn
work on). The policy, the records and :class:`~engine.turns.tools.ToolBox`, which offers and
runs them, are :mod:`engine.turns.tools`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from engine.ports import Clock, RandomSource, ToolSpec
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
"""How far a tool's effect reaches: reads only, the page's staged log, or the outside."""

MAX_DICE: Final = 100
"""Dice one ``roll_dice`` formula may throw."""
MAX_SIDES: Final = 10_000
MAX_CHOICES: Final = 200
DEFAULT_TOOL_SCOPE: Final[Scope] = "branch"
"""Where ``set_variable`` writes without a scope: the branch, like a SillyTavern local write."""

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


SCOPE_PROPERTY = {"type": "string", "enum": list(SCOPES), "description": "variable scope"}

BUILTIN_TOOLS: Final[tuple[Tool, ...]] = (
    Tool(
        spec=ToolSpec(
            name="get_variable",
            description="Read a chat variable (narrowest scope first unless scope is given).",
            parameters=_schema({"name": {"type": "string"}, "scope": SCOPE_PROPERTY}, ["name"]),
        ),
        side_effect="none",
        handler=_get_variable,
    ),
    Tool(
        spec=ToolSpec(
            name="set_variable",
            description="Set a chat variable; kept only if this reply is committed.",
            parameters=_schema(
                {"name": {"type": "string"}, "value": {}, "scope": SCOPE_PROPERTY},
                ["name", "value"],
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
