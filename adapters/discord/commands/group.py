"""Group role-play commands: ``/character add|remove|mute|unmute NAME`` and
``/group strategy|mode|speak``.

Changes to the group need the game-master role or Manage Server, as every write. ``/group
speak NAME`` is open to every player, as SillyTavern lets any user trigger a member: the member
answers in the channel through its own webhook identity, and the caller may react on that reply
as on their own floor's. Answers are ephemeral. ``NAME`` autocompletes the realm's cards for
``add`` and the session's characters otherwise.
"""

from __future__ import annotations

import discord
from discord import app_commands

from adapters.discord.commands.context import (
    CommandDeps,
    CommandRefused,
    Completer,
    answer,
    asset_completer,
    choices,
    imported,
    place_of_interaction,
    require_binding,
    require_game_master,
)
from adapters.discord.commands.guard import guard
from engine.group.settings import GenerationMode, Strategy
from engine.turns.api import SessionInfo, SessionKey
from engine.turns.members import find_name


def characters_of(info: SessionInfo) -> tuple[str, ...]:
    """The characters a session plays: its group's members, or its one character."""
    if info.members:
        return info.members
    return (info.character,) if info.character else ()


def group_line(info: SessionInfo) -> str:
    """The group as ``/session info`` shows it (empty for a solo session)."""
    if not info.members:
        return ""
    shown = ", ".join(f"{name} (muted)" if name in info.muted else name for name in info.members)
    return f"Group: {shown} · strategy: {info.strategy} · mode: {info.group_mode}"


async def _characters(deps: CommandDeps, key: SessionKey) -> tuple[str, ...]:
    return characters_of(await deps.service.session_info(key))


def member_completer(deps: CommandDeps) -> Completer:
    """Autocomplete the characters of the channel's session (none when it is not bound)."""

    async def complete(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        place = place_of_interaction(interaction)
        if await deps.sessions.binding(place.key) is None:
            return []
        return choices(list(await _characters(deps, place.key)), current)

    return complete


def _answer_group(info: SessionInfo) -> str:
    return group_line(info) or f"**{info.character or '—'}** plays here alone now."


def add_member_commands(deps: CommandDeps, character: app_commands.Group) -> None:
    """Add ``add``, ``remove``, ``mute`` and ``unmute`` to the ``/character`` group."""
    service = deps.service
    members = member_completer(deps)

    @character.command(name="add", description="Add a character to this group (game master)")
    @app_commands.autocomplete(name=asset_completer(deps, "card"))
    async def add(interaction: discord.Interaction, name: str) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            require_game_master(deps, interaction)
            await require_binding(deps, place)
            name = await imported(deps, place, "card", name)
            info = await service.add_member(place.key, name)
            deps.sessions.forget(place.key)
            await answer(interaction, f"➕ **{name}** joins. {_answer_group(info)}")

    @character.command(name="remove", description="Take a character out (game master)")
    @app_commands.autocomplete(name=members)
    async def remove(interaction: discord.Interaction, name: str) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            require_game_master(deps, interaction)
            await require_binding(deps, place)
            info = await service.remove_member(place.key, name)
            deps.sessions.forget(place.key)
            await answer(interaction, f"➖ **{name}** leaves. {_answer_group(info)}")

    async def mute(interaction: discord.Interaction, name: str, muted: bool) -> None:
        place = place_of_interaction(interaction)
        require_game_master(deps, interaction)
        await require_binding(deps, place)
        info = await service.mute_member(place.key, name, muted)
        said = "is muted: it speaks only when called" if muted else "speaks again"
        await answer(interaction, f"**{name}** {said}. {_answer_group(info)}")

    @character.command(name="mute", description="A member speaks only when called (game master)")
    @app_commands.autocomplete(name=members)
    async def mute_(interaction: discord.Interaction, name: str) -> None:
        async with guard(interaction):
            await mute(interaction, name, True)

    @character.command(name="unmute", description="A muted member speaks again (game master)")
    @app_commands.autocomplete(name=members)
    async def unmute(interaction: discord.Interaction, name: str) -> None:
        async with guard(interaction):
            await mute(interaction, name, False)


def build_group(deps: CommandDeps) -> app_commands.Group:
    """``/group strategy``, ``/group mode`` and ``/group speak``."""
    group = app_commands.Group(name="group", description="Who answers in a group role-play")
    service = deps.service

    @group.command(name="strategy", description="Who answers a message (game master)")
    @app_commands.describe(
        strategy="natural: the members named, then the talkative ones; list: every unmuted "
        "member in order; pooled: one who has not spoken yet; manual: only when called"
    )
    async def strategy(interaction: discord.Interaction, strategy: Strategy) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            require_game_master(deps, interaction)
            await require_binding(deps, place)
            info = await service.set_group_strategy(place.key, strategy)
            await answer(interaction, f"Set. {group_line(info)}")

    @group.command(name="mode", description="Whose cards the prompt holds (game master)")
    @app_commands.describe(mode="swap: the speaker's card only; join: every member's card")
    async def mode(interaction: discord.Interaction, mode: GenerationMode) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            require_game_master(deps, interaction)
            await require_binding(deps, place)
            info = await service.set_group_mode(place.key, mode)
            await answer(interaction, f"Set. {group_line(info)}")

    @group.command(name="speak", description="A character answers now")
    @app_commands.autocomplete(name=member_completer(deps))
    async def speak(interaction: discord.Interaction, name: str) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            await require_binding(deps, place)
            characters = await _characters(deps, place.key)
            found = find_name(characters, name)
            if found is None:
                listed = ", ".join(characters) or "none"
                raise CommandRefused(f"**{name}** does not play here (characters: {listed}).")
            await interaction.response.defer(ephemeral=True, thinking=True)
            view = await deps.turns.speak(place, found, speaker_id=str(interaction.user.id))
            shown = f"floor {view.floor}" if view is not None else "nothing"
            await answer(interaction, f"🗣️ **{found}** answered ({shown}).")

    return group
