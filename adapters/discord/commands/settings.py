"""``/session set option value``: a session's own settings, under the names every front end
uses (:mod:`engine.turns.options`), and the settings line of ``/session info``.

Changing one needs the game-master role; the answer is private and shows the new value. A bad
option or value is refused with the engine's one line naming it and what it takes. Both
arguments autocomplete: the options with their help, then the chosen option's values with the
session's current one first.
"""

from __future__ import annotations

import discord
from discord import app_commands

from adapters.discord.commands.context import (
    MAX_CHOICES,
    CommandDeps,
    answer,
    place_of_interaction,
    require_binding,
    require_game_master,
)
from adapters.discord.commands.guard import guard
from engine.errors import ConfigurationError
from engine.turns.api import SessionInfo
from engine.turns.options import option_lines, option_spec

CHOICE_NAME_LIMIT = 100
"""Discord's limit on the length of an autocomplete choice's name."""


def current_options(info: SessionInfo, policy: str) -> dict[str, str]:
    """The session's options as ``/session set`` takes them; a session without a reply policy
    of its own has the one it follows (the adapter's default, ``policy``)."""
    found = dict(option_lines(info))
    if found.get("policy") == "default":
        found["policy"] = policy
    return found


def settings_line(info: SessionInfo, policy: str) -> str:
    """Every option of the session on one line, in ``/session set``'s names and words."""
    own = info.reply_policy is not None
    return " · ".join(
        f"{name} `{value}`" + (" (default)" if name == "policy" and not own else "")
        for name, value in current_options(info, policy).items()
    )


def add_session_set(deps: CommandDeps, group: app_commands.Group) -> None:
    """Add ``/session set option value`` to the ``/session`` group."""
    service = deps.service

    async def option_names(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        typed = current.strip().casefold()
        return [
            app_commands.Choice(
                name=f"{spec.name}: {spec.help}"[:CHOICE_NAME_LIMIT], value=spec.name
            )
            for spec in service.session_option_specs()
            if typed in spec.name
        ][:MAX_CHOICES]

    async def option_values(
        interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[str]]:
        try:
            spec = option_spec(str(getattr(interaction.namespace, "option", None) or ""))
        except ConfigurationError:
            return []
        words = list(spec.values)
        place = place_of_interaction(interaction)
        binding = await deps.sessions.binding(place.key)
        if binding is not None:
            # The session's value first (for budget, a number, it is the only choice).
            now = current_options(await service.session_info(place.key), binding.policy)
            words = [now[spec.name], *(w for w in words if w != now[spec.name])]
        typed = current.strip().casefold()
        return [app_commands.Choice(name=w, value=w) for w in words if typed in w][:MAX_CHOICES]

    @group.command(name="set", description="Change a setting of this session (game master)")
    @app_commands.describe(
        option="mode, tools, memory, budget, macros, policy or global_writes",
        value="The new value (the choices list what the option takes)",
    )
    @app_commands.autocomplete(option=option_names, value=option_values)
    async def set_(interaction: discord.Interaction, option: str, value: str) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            require_game_master(deps, interaction)
            await require_binding(deps, place)
            found = await service.set_session_option(place.key, option, value)
            deps.sessions.forget(place.key)  # the reply policy may have changed
            binding = await require_binding(deps, place)
            name = option_spec(option).name
            shown = current_options(found, binding.policy)[name]
            await answer(interaction, f"Set. This session's **{name}** is now `{shown}`.")
