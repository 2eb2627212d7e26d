"""Asset and memory commands: ``/character``, ``/preset``, ``/worldbook``, ``/regex``, ``/memory``.

Imports take a SillyTavern file as an attachment and need the game-master role; they land in
the guild's realm and are bound to this channel's session. Switching a preset, attaching or
detaching a world book use the service's ``bind_asset`` / ``unbind_asset``; ``/memory`` shows and
forgets the service's memories of this branch.
"""

from __future__ import annotations

import discord
from discord import app_commands

from adapters.discord.commands.context import (
    MAX_ATTACHMENT_BYTES,
    CommandDeps,
    CommandRefused,
    Completer,
    answer,
    asset_completer,
    greet,
    imported,
    place_of_interaction,
    require_binding,
    require_game_master,
)
from adapters.discord.commands.group import group_line
from adapters.discord.commands.guard import guard
from adapters.discord.convert import library_key
from engine.turns.api import AssetKind

MEMORY_LIST_LIMIT = 20


async def _import(
    deps: CommandDeps,
    interaction: discord.Interaction,
    kind: AssetKind,
    file: discord.Attachment,
) -> None:
    place = place_of_interaction(interaction)
    require_game_master(deps, interaction)
    if file.size > MAX_ATTACHMENT_BYTES:
        raise CommandRefused(f"{file.filename} is larger than {MAX_ATTACHMENT_BYTES} bytes.")
    await interaction.response.defer(ephemeral=True, thinking=True)
    data = await file.read()
    was_bound = await deps.sessions.binding(place.key) is not None
    # In a bound channel the file is imported through its session (and used there). Elsewhere
    # it goes through the realm's library session: importing must not start playing in this
    # channel, and the service imports only through a session (it binds the file to it).
    target = place.key if was_bound else library_key(place.key.realm)
    if not was_bound:
        await deps.service.open_session(target)
    summary = await deps.service.import_asset(target, kind, file.filename, data)
    if was_bound:
        deps.sessions.forget(place.key)
    details = ", ".join(f"{k}: {v}" for k, v in summary.details.items())
    await answer(
        interaction, f"Imported {kind} **{summary.name}**" + (f" ({details})" if details else "")
    )


async def _bind(
    deps: CommandDeps,
    interaction: discord.Interaction,
    kind: AssetKind,
    name: str,
    *,
    attach: bool,
) -> None:
    place = place_of_interaction(interaction)
    require_game_master(deps, interaction)
    await require_binding(deps, place)
    if attach:
        await deps.service.bind_asset(place.key, kind, name)
    else:
        await deps.service.unbind_asset(place.key, kind, name)
    deps.sessions.forget(place.key)
    await answer(interaction, f"{'Using' if attach else 'Detached'} {kind} **{name}**.")


def build_assets(deps: CommandDeps) -> list[app_commands.Group]:
    """The ``/character``, ``/preset``, ``/worldbook`` and ``/regex`` groups."""
    service = deps.service

    def completer(kind: AssetKind) -> Completer:
        return asset_completer(deps, kind)

    character = app_commands.Group(name="character", description="The session's character")

    @character.command(name="import", description="Import a character card (PNG or JSON)")
    async def character_import(interaction: discord.Interaction, file: discord.Attachment) -> None:
        async with guard(interaction):
            await _import(deps, interaction, "card", file)

    @character.command(name="set", description="Play another imported character (game master)")
    @app_commands.autocomplete(name=completer("card"))
    async def character_set(interaction: discord.Interaction, name: str) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            require_game_master(deps, interaction)
            await require_binding(deps, place)
            name = await imported(deps, place, "card", name)
            binding = await deps.sessions.bind(place.key, character=name)
            await answer(interaction, f"🎭 **{binding.character or name}** plays here now.")
            # A chat with no message yet opens with the new character's greeting; one that
            # has begun goes on as it is (SillyTavern greets new chats only).
            await greet(deps, interaction, place)

    @character.command(name="info", description="Character, preset and world books in use")
    async def character_info(interaction: discord.Interaction) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            await require_binding(deps, place)
            found = await service.session_info(place.key)
            group = group_line(found)
            await answer(
                interaction,
                f"Character: **{found.character or '—'}**\nPreset: {found.preset or '—'}\n"
                f"World books: {', '.join(found.worldbooks) or '—'}"
                + (f"\n{group}" if group else ""),
            )

    preset = app_commands.Group(name="preset", description="The session's preset")

    @preset.command(name="import", description="Import a SillyTavern preset (JSON)")
    async def preset_import(interaction: discord.Interaction, file: discord.Attachment) -> None:
        async with guard(interaction):
            await _import(deps, interaction, "preset", file)

    @preset.command(name="set", description="Use an imported preset (game master)")
    @app_commands.autocomplete(name=completer("preset"))
    async def preset_set(interaction: discord.Interaction, name: str) -> None:
        async with guard(interaction):
            await _bind(deps, interaction, "preset", name, attach=True)

    worldbook = app_commands.Group(name="worldbook", description="The session's world books")

    @worldbook.command(name="import", description="Import a SillyTavern world book (JSON)")
    async def worldbook_import(interaction: discord.Interaction, file: discord.Attachment) -> None:
        async with guard(interaction):
            await _import(deps, interaction, "worldbook", file)

    @worldbook.command(name="attach", description="Attach an imported world book (game master)")
    @app_commands.autocomplete(name=completer("worldbook"))
    async def worldbook_attach(interaction: discord.Interaction, name: str) -> None:
        async with guard(interaction):
            await _bind(deps, interaction, "worldbook", name, attach=True)

    @worldbook.command(name="detach", description="Detach a world book (game master)")
    @app_commands.autocomplete(name=completer("worldbook"))
    async def worldbook_detach(interaction: discord.Interaction, name: str) -> None:
        async with guard(interaction):
            await _bind(deps, interaction, "worldbook", name, attach=False)

    regex = app_commands.Group(name="regex", description="The session's regex scripts")

    @regex.command(name="import", description="Import SillyTavern regex scripts (JSON)")
    async def regex_import(interaction: discord.Interaction, file: discord.Attachment) -> None:
        async with guard(interaction):
            await _import(deps, interaction, "regex", file)

    return [character, preset, worldbook, regex]


def build_memory(deps: CommandDeps) -> app_commands.Group:
    """``/memory list|search|forget``."""
    group = app_commands.Group(name="memory", description="What the story remembers")

    async def memories(interaction: discord.Interaction, query: str | None) -> None:
        place = place_of_interaction(interaction)
        await require_binding(deps, place)
        found = await deps.service.memories(
            place.key, place.branch, query=query, limit=MEMORY_LIST_LIMIT
        )
        if not found:
            await answer(
                interaction, "Nothing remembered" + (f" about “{query}”." if query else ".")
            )
            return
        await answer(interaction, "\n".join(f"`{m.id}` {m.text}" for m in found))

    @group.command(name="list", description="The memories of this branch")
    async def list_(interaction: discord.Interaction) -> None:
        async with guard(interaction):
            await memories(interaction, None)

    @group.command(name="search", description="Memories about something")
    async def search(interaction: discord.Interaction, query: str) -> None:
        async with guard(interaction):
            await memories(interaction, query)

    @group.command(name="forget", description="Forget one memory (game master)")
    async def forget(interaction: discord.Interaction, memory_id: str) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            require_game_master(deps, interaction)
            await require_binding(deps, place)
            await deps.service.forget_memory(place.key, memory_id)
            await answer(interaction, f"Forgot memory `{memory_id}`.")

    return group
