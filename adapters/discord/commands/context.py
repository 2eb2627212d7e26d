"""What every slash command needs: its place, the caller's rights, and an ephemeral answer.

Reads are open to anyone who can use the command in the channel (Discord only delivers it to
members who see the channel); writes and imports need the game-master role named in the config
or Manage Server. Everything is addressed by the interaction's own guild and channel, so nothing
of one guild is reachable from another.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import discord
from discord import app_commands

from adapters.discord.convert import Place, library_key, place_of, speaker_of
from adapters.discord.personas import Personas
from adapters.discord.sessions import Binding, Sessions
from engine.errors import NotFoundError
from engine.turns.api import AssetKind, ReplyView, RoleplayService, SessionKey

ANSWER_LIMIT = 1_900  # leaves room under Discord's 2000 for a "truncated" note
MAX_CHOICES = 25  # Discord's autocomplete limit
MAX_ATTACHMENT_BYTES = 8 * 1024 * 1024

NOT_BOUND = "This channel is not bound to a session. A game master can use `/tavern start`."
NEEDS_GM = "You need the **{role}** role or Manage Server for that."


class SessionCaches(Protocol):
    """What a command needs of the running turns: dropping what they keep of a session,
    opening a new chat with the character's greeting, and making a character speak."""

    def forget_session(self, key: SessionKey) -> None:
        """Forget the cached state of the session ``key`` (after a reset)."""

    async def greet(self, place: Place, *, user_name: str, speaker_id: str) -> ReplyView | None:
        """Post the character's greeting as floor 1 of the place's branch when it has no floor
        yet and the card has a greeting; None otherwise."""

    async def speak(self, place: Place, name: str, *, speaker_id: str) -> ReplyView | None:
        """Make the character ``name`` answer now in ``place`` under its own name (None when
        the place is not bound); a failure is shown in place and raised."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandDeps:
    """What the commands use of the front end: the service, the runner's public parts and the
    game-master role's name. The runner builds it; commands never see the runner itself."""

    service: RoleplayService
    sessions: Sessions
    personas: Personas
    turns: SessionCaches
    game_master_role: str


Completer = Callable[
    [discord.Interaction, str], Coroutine[Any, Any, list[app_commands.Choice[str]]]
]
"""An autocomplete callback, as discord.py calls it."""


class CommandRefused(Exception):
    """A command cannot go on; the message is shown to the caller."""


def place_of_interaction(interaction: discord.Interaction) -> Place:
    """The place a command was used in."""
    place = place_of(interaction.channel, interaction.user.id)
    if place is None:
        raise CommandRefused("Commands work in text channels, threads and DMs only.")
    return place


def is_game_master(interaction: discord.Interaction, role_name: str) -> bool:
    """Game-master role, Manage Server, or the owner of a private (DM) session."""
    if interaction.guild is None:
        return True
    if interaction.permissions.manage_guild:
        return True
    user = interaction.user  # a Member in a guild; a bare User carries no roles
    return isinstance(user, discord.Member) and any(role.name == role_name for role in user.roles)


def require_game_master(deps: CommandDeps, interaction: discord.Interaction) -> None:
    """Raise CommandRefused unless the caller may write."""
    if not is_game_master(interaction, deps.game_master_role):
        raise CommandRefused(NEEDS_GM.format(role=deps.game_master_role))


async def greet(deps: CommandDeps, interaction: discord.Interaction, place: Place) -> None:
    """Open a new chat as SillyTavern does: the character's greeting as its first message,
    addressed to the caller (their persona's name for ``{{user}}``). Posts nothing when the
    place's branch has a floor already or the card has no greeting."""
    await deps.personas.load(place.key, [str(interaction.user.id)])
    speaker = speaker_of(interaction.user, deps.personas.names(place.key.realm))
    await deps.turns.greet(place, user_name=speaker.name, speaker_id=speaker.id)


async def require_binding(deps: CommandDeps, place: Place) -> Binding:
    """The place's binding, or CommandRefused when the channel is not bound."""
    binding = await deps.sessions.binding(place.key)
    if binding is None:
        raise CommandRefused(NOT_BOUND)
    await deps.sessions.ensure_branch(place, binding)
    return binding


_ASSET_WORDS: dict[AssetKind, tuple[str, str]] = {
    "card": ("character", "/character import"),
    "preset": ("preset", "/preset import"),
    "worldbook": ("world book", "/worldbook import"),
    "regex": ("regex set", "/regex import"),
}


async def imported(deps: CommandDeps, place: Place, kind: AssetKind, name: str) -> str:
    """The imported asset ``name`` names in the realm of ``place``: an exact match first, then
    the one match ignoring case; CommandRefused naming what is imported otherwise."""
    word, command = _ASSET_WORDS[kind]
    names = await asset_names(deps.service, place.key, kind)
    if name in names:
        return name
    folded = [n for n in names if n.casefold() == name.casefold()]
    if len(folded) == 1:
        return folded[0]
    if not names:
        raise CommandRefused(
            f"No {word} **{name}** here: none is imported yet. "
            f"A game master can add one with `{command}`."
        )
    if folded:
        raise CommandRefused(f"**{name}** could be {', '.join(folded)}: use the exact name.")
    raise CommandRefused(
        f"No {word} **{name}** here. Imported: {', '.join(names)}. `{command}` adds another."
    )


def clip(text: str, limit: int = ANSWER_LIMIT) -> str:
    """Shorten an answer to fit one message."""
    if len(text) <= limit:
        return text
    return text[: limit - 20].rstrip() + "\n… (truncated)"


def show_value(value: Any) -> str:
    """A variable's value as one line of text."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def parse_value(text: str) -> Any:
    """A typed value from command text: JSON when it parses (numbers, lists...), else text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def as_file(name: str, data: bytes | str | Mapping[str, Any]) -> discord.File:
    """An attachment for an answer."""
    if isinstance(data, Mapping):
        data = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    raw = data.encode() if isinstance(data, str) else data
    return discord.File(io.BytesIO(raw), filename=name)


async def answer(
    interaction: discord.Interaction, text: str, *, file: discord.File | None = None
) -> None:
    """Answer ephemerally (a follow-up when the interaction was already deferred)."""
    kwargs: dict[str, Any] = {"ephemeral": True}
    if file is not None:
        kwargs["file"] = file
    if interaction.response.is_done():
        await interaction.followup.send(clip(text), **kwargs)
    else:
        await interaction.response.send_message(clip(text), **kwargs)


async def asset_names(service: RoleplayService, key: SessionKey, kind: AssetKind) -> list[str]:
    """Asset names of ``kind`` in the realm of ``key`` (none when nothing was imported), for
    autocomplete and name checks."""
    # The service addresses the realm through a session: the channel's when it has one,
    # else the realm's library session (imports made outside bound channels).
    for via in (key, library_key(key.realm)):
        try:
            return sorted(await service.list_assets(via, kind))
        except NotFoundError:
            continue
    return []


def choices(names: list[str], current: str) -> list[discord.app_commands.Choice[str]]:
    """Autocomplete choices matching what was typed so far."""
    typed = current.casefold()
    matching = [n for n in names if typed in n.casefold()]
    return [discord.app_commands.Choice(name=n[:100], value=n[:100]) for n in matching][
        :MAX_CHOICES
    ]


def asset_completer(deps: CommandDeps, kind: AssetKind) -> Completer:
    """An autocomplete callback offering the realm's imported assets of ``kind``."""

    async def complete(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        place = place_of_interaction(interaction)
        return choices(await asset_names(deps.service, place.key, kind), current)

    return complete
