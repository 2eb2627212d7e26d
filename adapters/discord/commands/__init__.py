"""The slash commands and the message command, all answered ephemerally.

The runner sees them through :func:`register` alone, and they see the runner only through the
:class:`CommandDeps` it hands over: no module here imports the runner.
"""

from __future__ import annotations

import discord
from discord import app_commands

from adapters.discord.commands.assets import build_assets, build_memory
from adapters.discord.commands.context import CommandDeps
from adapters.discord.commands.group import add_member_commands, build_group
from adapters.discord.commands.play import (
    build_branch_here,
    build_persona,
    build_session,
    build_tavern,
    build_tools,
)
from adapters.discord.commands.vars import build_vars

__all__ = ["CommandDeps", "register"]


def register(tree: app_commands.CommandTree[discord.Client], deps: CommandDeps) -> None:
    """Add every command to ``tree``, each answering through ``deps``."""
    assets = build_assets(deps)
    add_member_commands(deps, next(g for g in assets if g.name == "character"))
    for group in (
        build_tavern(deps),
        build_vars(deps),
        *assets,
        build_group(deps),
        build_persona(deps),
        build_memory(deps),
        build_session(deps),
    ):
        tree.add_command(group)
    for command in build_tools(deps):
        tree.add_command(command)
    tree.add_command(build_branch_here(deps))
