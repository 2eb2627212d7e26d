"""``/vars list|get|set|delete|history``: the session's variables, ephemerally.

Without a scope, ``list`` and ``get`` show the merged local view at the head of the branch (the
thread's branch inside a thread); with one, that scope only. ``set`` and ``delete`` write one
scope explicitly (``chat`` by default) and need the game-master role.
"""

from __future__ import annotations

import discord
from discord import app_commands

from adapters.discord.commands.context import (
    CommandDeps,
    answer,
    choices,
    parse_value,
    place_of_interaction,
    require_binding,
    require_game_master,
    show_value,
)
from adapters.discord.commands.guard import guard
from engine.errors import EngineError
from engine.variables.values import Scope


def build_vars(deps: CommandDeps) -> app_commands.Group:
    """The ``/vars`` group."""
    group = app_commands.Group(name="vars", description="Inspect and change session variables")
    service = deps.service

    async def names(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        place = place_of_interaction(interaction)
        if await deps.sessions.binding(place.key) is None:
            return []
        try:
            found = await service.variables(place.key, place.branch)
        except EngineError:  # e.g. a thread whose branch is made on its first message
            return []
        return choices(sorted(found), current)

    @group.command(name="list", description="Show the variables (merged view, or one scope)")
    async def list_(interaction: discord.Interaction, scope: Scope | None = None) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            await require_binding(deps, place)
            found = await service.variables(place.key, place.branch, scope)
            title = f"Variables ({scope or 'merged view'}, branch `{place.branch}`)"
            if not found:
                await answer(interaction, f"{title}: none.")
                return
            lines = [f"`{name}` = {show_value(value)}" for name, value in sorted(found.items())]
            await answer(interaction, title + "\n" + "\n".join(lines))

    @group.command(name="get", description="Show one variable")
    @app_commands.autocomplete(name=names)
    async def get(interaction: discord.Interaction, name: str, scope: Scope | None = None) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            await require_binding(deps, place)
            found = await service.variables(place.key, place.branch, scope)
            if name not in found:
                await answer(interaction, f"`{name}` is not set ({scope or 'merged view'}).")
                return
            await answer(interaction, f"`{name}` = {show_value(found[name])}")

    @group.command(name="set", description="Set a variable in one scope (game master)")
    async def set_(
        interaction: discord.Interaction, name: str, value: str, scope: Scope = "chat"
    ) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            require_game_master(deps, interaction)
            await require_binding(deps, place)
            parsed = parse_value(value)
            await service.set_variable(place.key, place.branch, name, parsed, scope)
            await answer(interaction, f"Set `{name}` = {show_value(parsed)} in {scope}.")

    @group.command(name="delete", description="Delete a variable from one scope (game master)")
    @app_commands.autocomplete(name=names)
    async def delete(interaction: discord.Interaction, name: str, scope: Scope = "chat") -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            require_game_master(deps, interaction)
            await require_binding(deps, place)
            await service.delete_variable(place.key, place.branch, name, scope)
            await answer(interaction, f"Deleted `{name}` from {scope}.")

    @group.command(name="history", description="Every write of one variable on this branch")
    @app_commands.autocomplete(name=names)
    async def history(interaction: discord.Interaction, name: str) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            await require_binding(deps, place)
            writes = await service.variable_history(place.key, place.branch, name)
            if not writes:
                await answer(interaction, f"`{name}` was never written on this branch.")
                return
            lines = []
            for write in writes:
                where = f"floor {write.floor}" if write.floor is not None else "explicit"
                if write.page is not None:
                    where += f" page {write.page}"
                shown = "(deleted)" if write.deleted else show_value(write.value)
                lines.append(f"{write.scope} · {where}: {shown}")
            await answer(interaction, f"History of `{name}`:\n" + "\n".join(lines))

    return group
