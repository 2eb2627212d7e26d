"""The session options users change, under one set of names on every front end.

Console ``/set OPTION VALUE``, Discord ``/session set option value`` and Telegram
``/set OPTION VALUE`` all take the names of :data:`SESSION_OPTION_SPECS`, and every ``/info``
shows them with :func:`option_lines`, in the same words::

    mode           compat_strict | compat_plus | native      -> prompt_mode
    tools          on | off                                  -> the ToolPolicy's ``enabled``
    memory         on | off                                  -> memory (summaries, jobs, block)
    budget         0..MAX_MEMORY_BUDGET tokens               -> memory_budget
    macros         read_only | full | off                    -> macro_mode (player text)
    policy         every_message | mention | quiet_period    -> reply_policy
    global_writes  on | off                                  -> tools_global_writes

The settings' own long names (``prompt_mode``, ``macro_mode``, ``reply_policy``,
``memory_budget``, ``tools_global_writes``) are accepted too. :class:`SessionDefaults` holds
what a newly created session starts with (the ``[session]`` section of the configuration,
DESIGN.md section 10); a session keeps its settings once created.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from engine.errors import ConfigurationError
from engine.memory.injection import MEMORY_BUDGET_TOKENS
from engine.prompt.ir import MODES
from engine.prompt.macro_port import PLAYER_ACCESS_MODES
from engine.timeline.values import SessionSettings
from engine.turns.api import REPLY_POLICIES, OptionSpec, SessionInfo
from engine.turns.profiles import DEFAULT_ENABLED_SLOTS, SLOTS, Slot, Stage, stages_for_turn
from engine.turns.tools import TOOLS_GLOBAL_WRITES

PROMPT_MODES: Final[tuple[str, ...]] = MODES
"""What ``mode`` takes: SillyTavern's prompt exactly, plus the memory block, the prompt graph."""
MACRO_MODES: Final[tuple[str, ...]] = PLAYER_ACCESS_MODES
"""What ``macros`` takes: how macros in player text are evaluated."""
SWITCH_VALUES: Final[tuple[str, ...]] = ("on", "off")
"""What an on/off option is shown with (``true/false``, ``yes/no``, ``1/0`` are read too)."""
MAX_MEMORY_BUDGET: Final = 32_000
"""The largest memory budget (tokens) a session may set."""
DEFAULT_MEMORY_BUDGET: Final = MEMORY_BUDGET_TOKENS
"""Tokens of long-term memory a session injects per turn unless it sets its own budget
(the memory service's injection default)."""
MEMORY_BUDGET: Final = "memory_budget"
"""Session setting (extra key): tokens of long-term memory injected per turn."""
MEMORY_SETTING: Final = "memory"
"""Session setting (extra key): memory on or off (absent: on)."""
TOOLS_SETTING: Final = "tools"
"""Session setting (extra key): the ToolPolicy JSON; its ``enabled`` is the ``tools`` option."""

_TRUE: Final = frozenset({"on", "true", "yes", "1"})
_FALSE: Final = frozenset({"off", "false", "no", "0"})


SESSION_OPTION_SPECS: Final[tuple[OptionSpec, ...]] = (
    OptionSpec(
        name="mode",
        values=PROMPT_MODES,
        help="prompt layout: SillyTavern's exactly, plus the memory block, or the prompt graph",
    ),
    OptionSpec(name="tools", values=SWITCH_VALUES, help="offer the built-in tools to the model"),
    OptionSpec(
        name="memory",
        values=SWITCH_VALUES,
        help="long-term memory: summaries kept, memory jobs run, the memory block injected",
    ),
    OptionSpec(
        name="budget",
        values=(),
        help=f"tokens of long-term memory injected per turn (0 to {MAX_MEMORY_BUDGET})",
    ),
    OptionSpec(name="macros", values=MACRO_MODES, help="how macros in player text are run"),
    OptionSpec(
        name="policy", values=REPLY_POLICIES, help="when the bot answers in a shared channel"
    ),
    OptionSpec(
        name="global_writes",
        values=SWITCH_VALUES,
        help="let the model's tools write the realm's global variables",
    ),
)
"""Every option ``set_session_option`` takes, in the order ``/info`` shows them."""

_BY_NAME: Final[Mapping[str, OptionSpec]] = {s.name: s for s in SESSION_OPTION_SPECS}
_ALIASES: Final[Mapping[str, str]] = {
    "prompt_mode": "mode",
    "macro_mode": "macros",
    "reply_policy": "policy",
    MEMORY_BUDGET: "budget",
    TOOLS_GLOBAL_WRITES: "global_writes",
}
"""The settings' long names, still accepted."""


def option_spec(name: str) -> OptionSpec:
    """The option called ``name`` (or by its setting's long name), any case;
    ConfigurationError listing the options otherwise."""
    word = name.strip().lower()
    found = _BY_NAME.get(_ALIASES.get(word, word))
    if found is None:
        raise ConfigurationError(
            f"unknown session option {name!r}; options: "
            + ", ".join(s.name for s in SESSION_OPTION_SPECS)
        )
    return found


def parse_switch(option: str, value: object) -> bool:
    """An on/off value (``on/off``, ``true/false``, ``yes/no``, ``1/0``, or a bool)."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ConfigurationError(f"session option {option} must be on or off, not {value!r}")


def parse_budget(value: object) -> int:
    """A memory budget: a whole number of tokens from 0 to :data:`MAX_MEMORY_BUDGET`."""
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().isdigit():
        number = int(value.strip())
    if number is None or not 0 <= number <= MAX_MEMORY_BUDGET:
        raise ConfigurationError(
            f"session option budget must be a whole number of tokens from 0 to "
            f"MAX_MEMORY_BUDGET={MAX_MEMORY_BUDGET}, not {value!r}"
        )
    return number


def _choice(spec: OptionSpec, value: object) -> str:
    word = str(value).strip().lower()
    if word not in spec.values:
        raise ConfigurationError(
            f"session option {spec.name} must be one of {', '.join(spec.values)}, not {value!r}"
        )
    return word


def parse_option(name: str, value: object) -> tuple[OptionSpec, Any]:
    """The option and its value as the session stores it (a word, a bool or a number);
    ConfigurationError, one line naming the option and what it takes, when either is bad."""
    spec = option_spec(name)
    if spec.values == SWITCH_VALUES:
        return spec, parse_switch(spec.name, value)
    if spec.name == "budget":
        return spec, parse_budget(value)
    return spec, _choice(spec, value)


def option_changes(settings: SessionSettings, name: str, value: object) -> dict[str, Any]:
    """The session-setting changes that set option ``name`` to ``value`` on a session whose
    settings are ``settings`` (``tools`` keeps the rest of the session's tool policy)."""
    spec, parsed = parse_option(name, value)
    if spec.name == "mode":
        return {"prompt_mode": parsed}
    if spec.name == "macros":
        return {"macro_mode": parsed}
    if spec.name == "policy":
        return {"reply_policy": parsed}
    if spec.name == "budget":
        return {MEMORY_BUDGET: parsed}
    if spec.name == "memory":
        return {MEMORY_SETTING: parsed}
    if spec.name == "global_writes":
        return {TOOLS_GLOBAL_WRITES: parsed}
    policy = settings.extra.get(TOOLS_SETTING)
    kept = dict(policy) if isinstance(policy, Mapping) else {}
    kept["enabled"] = parsed
    return {TOOLS_SETTING: kept}


def tools_enabled(settings: SessionSettings) -> bool:
    """Whether the session offers the model its tools: the tool policy's ``enabled``; off
    when the session has none."""
    policy = settings.extra.get(TOOLS_SETTING)
    return isinstance(policy, Mapping) and bool(policy.get("enabled", False))


def memory_enabled(settings: SessionSettings) -> bool:
    """Whether the session keeps and injects long-term memory (on unless switched off)."""
    return settings.extra.get(MEMORY_SETTING) is not False


def memory_budget(settings: SessionSettings) -> int:
    """The session's memory budget in tokens (:data:`DEFAULT_MEMORY_BUDGET` when unset)."""
    budget = settings.extra.get(MEMORY_BUDGET)
    if isinstance(budget, int) and not isinstance(budget, bool):
        return budget
    return DEFAULT_MEMORY_BUDGET


def _switch(on: bool) -> str:
    return "on" if on else "off"


def option_lines(info: SessionInfo) -> list[tuple[str, str]]:
    """Every option of a session as ``(name, value)``, in the words ``/set`` takes, for
    every front end's ``/info`` (``policy`` is ``default`` when the front end decides)."""
    return [
        ("mode", info.prompt_mode),
        ("tools", _switch(info.tools)),
        ("memory", _switch(info.memory)),
        ("budget", str(info.memory_budget)),
        ("macros", info.macro_mode),
        ("policy", info.reply_policy or "default"),
        ("global_writes", _switch(info.tools_global_writes)),
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionDefaults:
    """What every newly created session starts with (``[session]`` in the configuration).
    Checked when built: ConfigurationError naming the bad field."""

    prompt_mode: str = "compat_plus"
    tools: bool = False
    memory: bool = True
    memory_budget: int | None = None
    """None: the memory service's own default (:data:`DEFAULT_MEMORY_BUDGET` tokens)."""
    macro_mode: str = "read_only"
    reply_policy: str | None = None
    """None: each front end's own default (Discord's ``[discord] reply_policy``)."""

    def __post_init__(self) -> None:
        parse_option("mode", self.prompt_mode)
        parse_option("macros", self.macro_mode)
        if self.memory_budget is not None:
            parse_budget(self.memory_budget)
        if self.reply_policy is not None:
            parse_option("policy", self.reply_policy)
        for name in ("tools", "memory"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigurationError(f"session default {name} must be true or false")

    def settings(self, **overrides: Any) -> SessionSettings:
        """The settings a new session is created with (``overrides``: settings a caller
        gives for this session, such as ``tavernbot chat --mode``)."""
        data: dict[str, Any] = {
            "prompt_mode": self.prompt_mode,
            "macro_mode": self.macro_mode,
            "reply_policy": self.reply_policy,
            TOOLS_SETTING: {"enabled": self.tools},
            MEMORY_SETTING: self.memory,
        }
        if self.memory_budget is not None:
            data[MEMORY_BUDGET] = self.memory_budget
        data.update(overrides)
        return SessionSettings.from_json(data)


__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "MACRO_MODES",
    "MAX_MEMORY_BUDGET",
    "MEMORY_BUDGET",
    "MEMORY_SETTING",
    "MEMORY_STAGES",
    "PROMPT_MODES",
    "SESSION_OPTION_SPECS",
    "SWITCH_VALUES",
    "TOOLS_GLOBAL_WRITES",
    "TOOLS_SETTING",
    "OptionSpec",
    "SessionDefaults",
    "memory_budget",
    "memory_enabled",
    "option_changes",
    "option_lines",
    "option_spec",
    "parse_option",
    "parse_switch",
    "session_stages",
    "tools_enabled",
]


MEMORY_STAGES: Final[frozenset[Stage]] = frozenset({"memory_retrieval", "memory_agent"})
"""The stages a session with its memory off leaves out."""


def session_stages(settings: SessionSettings) -> tuple[Stage, ...]:
    """The stages a turn of a session runs: by its prompt mode and enabled slots, without
    the memory stages when its memory is off."""
    stages = stages_for_turn(settings.prompt_mode, _enabled_slots(settings))
    if memory_enabled(settings):
        return stages
    return tuple(s for s in stages if s not in MEMORY_STAGES)


def _enabled_slots(settings: SessionSettings) -> tuple[Slot, ...]:
    slots = settings.extra.get("slots")
    if isinstance(slots, list | tuple):
        return tuple(s for s in SLOTS if s in slots)
    return tuple(s for s in SLOTS if s in DEFAULT_ENABLED_SLOTS)
