"""A group's settings: who is in it, who is muted, who speaks and how the cards are combined.

The values follow SillyTavern's group definition (``groups/<id>.json``): members in list order,
``disabled_members`` (muted), ``activation_strategy``, ``generation_mode`` with its join prefix
and suffix, and ``allow_self_responses``. Members are named by character name here; the file
format (:mod:`engine.formats.st_group`) keeps SillyTavern's avatar file names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, get_args

from engine.errors import ConfigurationError

Strategy = Literal["natural", "list", "pooled", "manual"]
"""Who answers a turn (SillyTavern's ``group_activation_strategy``):

- ``natural``: members named in the message, in mention order, then each member by its
  talkativeness; one talkative member if nobody was chosen;
- ``list``: every unmuted member, in list order;
- ``pooled``: one member who has not spoken since the user's last message;
- ``manual``: nobody answers a user's message; a member speaks when called by name.
"""
STRATEGIES: Final[tuple[Strategy, ...]] = get_args(Strategy)

GenerationMode = Literal["swap", "join"]
"""How the members' cards enter the prompt: ``swap`` puts only the speaker's card in it,
``join`` every member's description, personality, scenario and examples, each wrapped by the
join prefix and suffix (SillyTavern's ``generation_mode`` SWAP and APPEND)."""
GENERATION_MODES: Final[tuple[GenerationMode, ...]] = get_args(GenerationMode)

GROUP_SETTING: Final = "group"
"""The key of a session's group in its settings JSON (absent: a solo session)."""

MAX_GROUP_MEMBERS: Final = 16
"""Most characters one group holds. Each member answering a turn is one model call and one
floor, and a Discord channel shows every one of them; SillyTavern sets no bound."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupSettings:
    """One group. ``members`` are character names in list order (the order ``list`` speaks
    in); ``muted`` is a subset of them that never speaks unless called by name. With
    ``join_muted`` the join mode keeps muted members' cards in the prompt too (SillyTavern's
    "join, include muted"); without it only the speaker's own card is kept when it is muted.

    Raises :class:`~engine.errors.ConfigurationError` (one line) for an empty group, a name
    given twice, a muted name that is not a member, or more than :data:`MAX_GROUP_MEMBERS`.
    """

    members: tuple[str, ...]
    muted: tuple[str, ...] = ()
    strategy: Strategy = "natural"
    mode: GenerationMode = "swap"
    join_muted: bool = False
    join_prefix: str = ""
    join_suffix: str = ""
    allow_self_responses: bool = False

    def __post_init__(self) -> None:
        if not self.members:
            raise ConfigurationError("a group needs at least one character")
        if len(self.members) > MAX_GROUP_MEMBERS:
            raise ConfigurationError(
                f"a group holds at most {MAX_GROUP_MEMBERS} characters "
                f"(MAX_GROUP_MEMBERS), this one has {len(self.members)}"
            )
        if any(not name.strip() for name in self.members):
            raise ConfigurationError("a group member needs a name")
        twice = _first_repeat(self.members)
        if twice is not None:
            raise ConfigurationError(f"{twice} is in the group twice")
        strangers = [name for name in self.muted if name not in self.members]
        if strangers:
            raise ConfigurationError(f"{strangers[0]} is muted but not in the group")
        if self.strategy not in STRATEGIES:
            raise ConfigurationError(
                f"unknown group strategy {self.strategy!r}; use one of {', '.join(STRATEGIES)}"
            )
        if self.mode not in GENERATION_MODES:
            raise ConfigurationError(
                f"unknown group mode {self.mode!r}; use one of {', '.join(GENERATION_MODES)}"
            )

    @property
    def unmuted(self) -> tuple[str, ...]:
        """The members who may speak on their own, in list order."""
        return tuple(name for name in self.members if name not in self.muted)

    def is_muted(self, name: str) -> bool:
        """Whether ``name`` is a muted member."""
        return name in self.muted

    def to_json(self) -> dict[str, Any]:
        """The object stored under :data:`GROUP_SETTING` in a session's settings."""
        return {
            "members": list(self.members),
            "muted": list(self.muted),
            "strategy": self.strategy,
            "mode": self.mode,
            "join_muted": self.join_muted,
            "join_prefix": self.join_prefix,
            "join_suffix": self.join_suffix,
            "allow_self_responses": self.allow_self_responses,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GroupSettings:
        """Read :meth:`to_json`'s object back (missing keys take their defaults);
        ConfigurationError when it does not describe a valid group."""
        default = cls(members=("_",))
        return cls(
            members=tuple(str(name) for name in data.get("members") or ()),
            muted=tuple(str(name) for name in data.get("muted") or ()),
            strategy=data.get("strategy", default.strategy),
            mode=data.get("mode", default.mode),
            join_muted=bool(data.get("join_muted", default.join_muted)),
            join_prefix=str(data.get("join_prefix", default.join_prefix)),
            join_suffix=str(data.get("join_suffix", default.join_suffix)),
            allow_self_responses=bool(
                data.get("allow_self_responses", default.allow_self_responses)
            ),
        )


def group_of(extra: Mapping[str, Any]) -> GroupSettings | None:
    """The group stored in a session's settings (their ``extra`` keys), None for a solo
    session; the one place the stored object becomes :class:`GroupSettings`."""
    data = extra.get(GROUP_SETTING)
    if not isinstance(data, Mapping):
        return None
    return GroupSettings.from_json(data)


def _first_repeat(names: tuple[str, ...]) -> str | None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None
