"""SillyTavern group definitions (``groups/<id>.json``): parsing and export.

A group file names its members by their card's avatar file (``"Mira.png"``), in list order,
and its muted members in ``disabled_members``. :func:`parse_group` reads the fields the engine
uses and keeps the whole object in ``raw``; :func:`group_to_json` writes them back over it, so
every field the engine does not use (``avatar_url``, ``chat_metadata``, ``past_metadata``,
extension keys...) survives the round trip, and an unchanged field keeps its spelling. A
session keeps the file it imported (:func:`kept_definition`); :func:`export_definition` writes
the session's group back over it.

SillyTavern's numbers: ``activation_strategy`` 0 natural, 1 list, 2 manual, 3 pooled;
``generation_mode`` 0 swap, 1 join without muted members, 2 join with them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from engine.errors import FormatError
from engine.formats.json_input import (
    as_int,
    get_bool,
    get_str,
    get_str_list,
    load_object,
    type_name,
)
from engine.group.settings import MAX_GROUP_MEMBERS, GenerationMode, GroupSettings, Strategy

STRATEGY_BY_NUMBER: Final[Mapping[int, Strategy]] = {
    0: "natural",
    1: "list",
    2: "manual",
    3: "pooled",
}
"""SillyTavern's ``group_activation_strategy`` values."""
NUMBER_BY_STRATEGY: Final[Mapping[Strategy, int]] = {v: k for k, v in STRATEGY_BY_NUMBER.items()}

MODE_SWAP = 0
MODE_JOIN = 1
MODE_JOIN_WITH_MUTED = 2
"""SillyTavern's ``group_generation_mode``: SWAP, APPEND, APPEND_DISABLED."""

DEFAULT_AUTO_MODE_DELAY: Final = 5
"""Seconds between auto-mode turns when the file does not say (SillyTavern's default)."""

GROUP_FILE_SETTING: Final = "group_file"
"""Session setting keeping the imported group file: ``definition`` (the file's whole object)
and ``avatars`` (each member's avatar file name by character name), so an export gives back
every field SillyTavern has and the engine does not use (see :func:`kept_definition`)."""

_AVATAR_SUFFIX = ".png"


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupDefinition:
    """One group file. ``members`` and ``disabled_members`` are avatar file names as the file
    has them; :func:`member_name` gives the character name each stands for. ``raw`` is the
    decoded object, kept for a lossless export."""

    id: str = ""
    name: str = ""
    members: tuple[str, ...] = ()
    disabled_members: tuple[str, ...] = ()
    activation_strategy: int = 0
    generation_mode: int = MODE_SWAP
    join_prefix: str = ""
    join_suffix: str = ""
    allow_self_responses: bool = False
    auto_mode_delay: int = DEFAULT_AUTO_MODE_DELAY
    chat_id: str = ""
    chats: tuple[str, ...] = ()
    fav: bool = False
    hide_muted_sprites: bool = False
    raw: Mapping[str, object] = field(default_factory=dict)

    @property
    def strategy(self) -> Strategy:
        """The activation strategy by name."""
        return STRATEGY_BY_NUMBER[self.activation_strategy]

    @property
    def mode(self) -> GenerationMode:
        """The generation mode by name (both join numbers are ``join``)."""
        return "swap" if self.generation_mode == MODE_SWAP else "join"

    def settings(self, names: Mapping[str, str] | None = None) -> GroupSettings:
        """The group as engine settings. ``names`` maps avatar file names to the character
        names of the imported cards; an avatar it does not hold is named by
        :func:`member_name`."""
        lookup = names or {}

        def named(avatar: str) -> str:
            return lookup.get(avatar) or member_name(avatar)

        return GroupSettings(
            members=tuple(named(a) for a in self.members),
            muted=tuple(named(a) for a in self.disabled_members if a in self.members),
            strategy=self.strategy,
            mode=self.mode,
            join_muted=self.generation_mode == MODE_JOIN_WITH_MUTED,
            join_prefix=self.join_prefix,
            join_suffix=self.join_suffix,
            allow_self_responses=self.allow_self_responses,
        )


def member_name(avatar: str) -> str:
    """The character name an avatar file name stands for when no imported card says
    otherwise: the file name without ``.png`` (``"Mira.png"`` gives ``"Mira"``). Groups saved
    before SillyTavern keyed members by avatar list names, which come back unchanged."""
    if avatar.lower().endswith(_AVATAR_SUFFIX):
        return avatar[: -len(_AVATAR_SUFFIX)]
    return avatar


def parse_group(data: bytes, *, source: str) -> GroupDefinition:
    """Read a group file. Raises :class:`~engine.errors.FormatError` naming ``source``, the
    field and the problem (malformed JSON, a wrong type, an unknown strategy or mode, more
    than :data:`~engine.group.settings.MAX_GROUP_MEMBERS` members)."""
    obj = load_object(data, source=source, what="a group object")
    return group_from_mapping(obj, source=source)


def group_from_mapping(obj: Mapping[str, object], *, source: str) -> GroupDefinition:
    """Read an already decoded group object (see :func:`parse_group`)."""
    members = get_str_list(obj, "members", source=source, field="members")
    if len(members) > MAX_GROUP_MEMBERS:
        raise FormatError(
            f"{len(members)} members, over MAX_GROUP_MEMBERS={MAX_GROUP_MEMBERS}",
            source=source,
            field="members",
        )
    strategy = _number(obj, "activation_strategy", source, default=0)
    if strategy not in STRATEGY_BY_NUMBER:
        raise FormatError(
            f"unknown activation strategy {strategy} (0 natural, 1 list, 2 manual, 3 pooled)",
            source=source,
            field="activation_strategy",
        )
    mode = _number(obj, "generation_mode", source, default=MODE_SWAP)
    if mode not in (MODE_SWAP, MODE_JOIN, MODE_JOIN_WITH_MUTED):
        raise FormatError(
            f"unknown generation mode {mode} (0 swap, 1 join, 2 join with muted members)",
            source=source,
            field="generation_mode",
        )
    return GroupDefinition(
        id=get_str(obj, "id", source=source, field="id"),
        name=get_str(obj, "name", source=source, field="name"),
        members=members,
        disabled_members=get_str_list(
            obj, "disabled_members", source=source, field="disabled_members"
        ),
        activation_strategy=strategy,
        generation_mode=mode,
        join_prefix=get_str(
            obj, "generation_mode_join_prefix", source=source, field="generation_mode_join_prefix"
        ),
        join_suffix=get_str(
            obj, "generation_mode_join_suffix", source=source, field="generation_mode_join_suffix"
        ),
        allow_self_responses=get_bool(
            obj,
            "allow_self_responses",
            source=source,
            field="allow_self_responses",
            default=False,
        ),
        auto_mode_delay=_number(obj, "auto_mode_delay", source, default=DEFAULT_AUTO_MODE_DELAY),
        chat_id=get_str(obj, "chat_id", source=source, field="chat_id"),
        chats=_chat_ids(obj, source),
        fav=get_bool(obj, "fav", source=source, field="fav", default=False),
        hide_muted_sprites=get_bool(
            obj, "hideMutedSprites", source=source, field="hideMutedSprites", default=False
        ),
        raw=copy.deepcopy(dict(obj)),
    )


def _number(obj: Mapping[str, object], key: str, source: str, *, default: int) -> int:
    value = as_int(obj.get(key), source=source, field=key)
    return default if value is None else value


def _chat_ids(obj: Mapping[str, object], source: str) -> tuple[str, ...]:
    """``chats``: old files hold numbers, which SillyTavern turns into strings."""
    value = obj.get("chats")
    if value is None:
        return ()
    if not isinstance(value, list):
        raise FormatError(
            f"expected an array of chat ids, got {type_name(value)}", source=source, field="chats"
        )
    out: list[str] = []
    for i, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise FormatError(
                f"expected a chat id, got {type_name(item)}", source=source, field=f"chats[{i}]"
            )
        out.append(item if isinstance(item, str) else str(item))
    return tuple(out)


def _known(group: GroupDefinition) -> dict[str, object]:
    return {
        "id": group.id,
        "name": group.name,
        "members": list(group.members),
        "disabled_members": list(group.disabled_members),
        "activation_strategy": group.activation_strategy,
        "generation_mode": group.generation_mode,
        "generation_mode_join_prefix": group.join_prefix,
        "generation_mode_join_suffix": group.join_suffix,
        "allow_self_responses": group.allow_self_responses,
        "auto_mode_delay": group.auto_mode_delay,
        "chat_id": group.chat_id,
        "chats": list(group.chats),
        "fav": group.fav,
        "hideMutedSprites": group.hide_muted_sprites,
    }


def group_to_json(group: GroupDefinition) -> dict[str, object]:
    """The group as SillyTavern's JSON object: ``raw`` with the known fields written back.
    A field whose value did not change since import keeps its original spelling (an old
    numeric ``chat_id`` stays a number) and a field the file did not have is not added; a
    group made here (no ``raw``) gets every field."""
    out: dict[str, object] = copy.deepcopy(dict(group.raw))
    imported = _known(group_from_mapping(group.raw, source="")) if group.raw else {}
    for key, value in _known(group).items():
        # An imported file gets back only what changed; a new group gets every field.
        if not group.raw or imported.get(key) != value:
            out[key] = value
    return out


def kept_definition(definition: GroupDefinition, names: Mapping[str, str]) -> dict[str, object]:
    """What a session keeps of an imported group file under :data:`GROUP_FILE_SETTING`:
    the whole object, and the avatar file each member was named by (``names`` maps avatar
    file names to the imported cards' character names)."""
    avatars = {names[a]: a for a in definition.members if a in names}
    return {"definition": copy.deepcopy(dict(definition.raw)), "avatars": avatars}


def member_avatar(kept: object, name: str) -> str:
    """The avatar file name of member ``name``: the one it was imported with (the kept file,
    :func:`kept_definition`, or None), else ``NAME.png``."""
    record = kept if isinstance(kept, Mapping) else {}
    avatars = record.get("avatars")
    found = avatars.get(name) if isinstance(avatars, Mapping) else None
    return found if isinstance(found, str) and found else f"{name}{_AVATAR_SUFFIX}"


def export_definition(group: GroupSettings, kept: object, *, new_id: str) -> dict[str, object]:
    """The group file of a session's ``group``: the kept file (:func:`kept_definition`, or
    None) with the group's current members, muted members, strategy, mode, join prefix and
    suffix and self-responses written over it; every other field stays as imported.

    Members are written as avatar file names: the one a member was imported with, else
    ``NAME.png``. A group that was never imported gets a new file, as SillyTavern creates
    one: ``new_id`` as its id and its chat's id, named after its members."""
    record = kept if isinstance(kept, Mapping) else {}
    raw = record.get("definition")

    def avatar(name: str) -> str:
        return member_avatar(kept, name)

    if isinstance(raw, Mapping) and raw:
        base = group_from_mapping(raw, source=GROUP_FILE_SETTING)
    else:
        base = GroupDefinition(
            id=new_id, name=", ".join(group.members), chat_id=new_id, chats=(new_id,)
        )
    members = tuple(avatar(name) for name in group.members)
    disabled = tuple(avatar(name) for name in group.muted)
    still = tuple(a for a in base.disabled_members if a in members)
    if base.members == members and still == disabled:
        # The same members, the same ones muted: the file's list as it was (with any former
        # member's avatar SillyTavern left in it).
        disabled = base.disabled_members
    if group.mode == "swap":
        mode = MODE_SWAP
    else:
        mode = MODE_JOIN_WITH_MUTED if group.join_muted else MODE_JOIN
    return group_to_json(
        replace(
            base,
            members=members,
            disabled_members=disabled,
            activation_strategy=NUMBER_BY_STRATEGY[group.strategy],
            generation_mode=mode,
            join_prefix=group.join_prefix,
            join_suffix=group.join_suffix,
            allow_self_responses=group.allow_self_responses,
        )
    )
