"""The slash commands and the message command, all answered ephemerally."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adapters.discord.commands.assets import build_assets, build_memory
from adapters.discord.commands.play import (
    build_branch_here,
    build_persona,
    build_session,
    build_tavern,
    build_tools,
)
from adapters.discord.commands.vars import build_vars

if TYPE_CHECKING:
    from adapters.discord.runner import DiscordRunner


def register_commands(runner: DiscordRunner) -> None:
    """Add every command to the runner's command tree."""
    tree = runner.client.tree
    for group in (
        build_tavern(runner),
        build_vars(runner),
        *build_assets(runner),
        build_persona(runner),
        build_memory(runner),
        build_session(runner),
    ):
        tree.add_command(group)
    for command in build_tools(runner):
        tree.add_command(command)
    tree.add_command(build_branch_here(runner))
