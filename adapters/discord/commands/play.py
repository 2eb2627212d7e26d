"""Playing commands: ``/tavern``, ``/session`` (with the Author's Note), ``/persona``,
``/preview``, ``/dryrun`` and the message command "Branch from here"."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

import discord
from discord import app_commands

from adapters.discord.commands.context import (
    CommandDeps,
    CommandRefused,
    answer,
    as_file,
    asset_completer,
    greet,
    imported,
    place_of_interaction,
    require_binding,
    require_game_master,
)
from adapters.discord.commands.group import group_line
from adapters.discord.commands.guard import guard
from adapters.discord.commands.settings import add_session_set, settings_line
from adapters.discord.convert import place_of
from engine.prompt.inputs import AuthorNote
from engine.prompt.ir import Role
from engine.turns.api import AssetKind, ReplyPolicy
from engine.turns.notes import (
    MAX_NOTE_DEPTH,
    MAX_NOTE_INTERVAL,
    NO_NOTE_TO_CHANGE,
    POSITIONS,
    ROLES,
    describe_note,
    summarize_note,
)

PositionChoice = Literal["in_chat", "in_prompt", "before_prompt"]
THREAD_NAME_LIMIT = 100
EXISTING_THREAD = 160004
MEMORY_BLOCK = "memory"  # the identifier of the long-term memory block in a dry run's messages


def build_tavern(deps: CommandDeps) -> app_commands.Group:
    """``/tavern start character:<name> [character2..4] [policy] [preset] [worldbook]`` and
    ``/tavern stop``. Several characters make a group: one option per character, because each
    option autocompletes on its own and a name is checked exactly (names may hold commas)."""
    group = app_commands.Group(name="tavern", description="Bind this channel to a role-play")
    cards = asset_completer(deps, "card")

    @group.command(name="start", description="Play here with characters (game master)")
    @app_commands.describe(
        character="The character (the first of a group)",
        character2="A second character: the session becomes a group",
        character3="A third character",
        character4="A fourth character (more join with /character add)",
    )
    @app_commands.autocomplete(
        character=cards,
        character2=cards,
        character3=cards,
        character4=cards,
        preset=asset_completer(deps, "preset"),
        worldbook=asset_completer(deps, "worldbook"),
    )
    async def start(
        interaction: discord.Interaction,
        character: str,
        character2: str | None = None,
        character3: str | None = None,
        character4: str | None = None,
        policy: ReplyPolicy | None = None,
        preset: str | None = None,
        worldbook: str | None = None,
    ) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            require_game_master(deps, interaction)
            if place.is_thread:
                raise CommandRefused("Start in the channel itself; threads become its branches.")
            # Every name is checked before anything is bound.
            character = await imported(deps, place, "card", character)
            others: list[str] = []
            for name in (character2, character3, character4):
                if name is not None:
                    found = await imported(deps, place, "card", name)
                    if found != character and found not in others:
                        others.append(found)
            extras: list[tuple[AssetKind, str]] = []
            if preset is not None:
                extras.append(("preset", await imported(deps, place, "preset", preset)))
            if worldbook is not None:
                extras.append(("worldbook", await imported(deps, place, "worldbook", worldbook)))
            binding = await deps.sessions.bind(place.key, character=character, policy=policy)
            info = await deps.service.session_info(place.key)
            for name in others:
                if name not in info.members:
                    info = await deps.service.add_member(place.key, name)
            for kind, name in extras:
                await deps.service.bind_asset(place.key, kind, name)
            if extras or others:
                deps.sessions.forget(place.key)
            using = "".join(f", {kind} **{name}**" for kind, name in extras)
            cast = " and ".join(
                f"**{n}**" for n in info.members or (binding.character or character,)
            )
            verb = "play" if len(info.members) > 1 else "plays"
            await answer(
                interaction,
                f"🎭 {cast} {verb} here now{using} "
                f"(replies: {binding.policy}). Session `{place.key.realm}/{place.key.key}`.",
            )
            await greet(deps, interaction, place)

    @group.command(name="stop", description="Stop playing here; the story is kept (game master)")
    async def stop(interaction: discord.Interaction) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            require_game_master(deps, interaction)
            await require_binding(deps, place)
            await deps.sessions.unbind(place.key)
            await answer(interaction, "The tavern is closed here. `/tavern start` to reopen.")

    return group


def build_session(deps: CommandDeps) -> app_commands.Group:
    """``/session info|set|export|note|tools|reset``."""
    group = app_commands.Group(name="session", description="This channel's session")
    service = deps.service

    @group.command(name="info", description="Session key, character, preset and branches")
    async def info(interaction: discord.Interaction) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            binding = await require_binding(deps, place)
            found = await service.session_info(place.key)
            branches = ", ".join(
                f"`{b.name}` ({b.floors_text}"
                + (f", from `{b.parent}` after {b.fork_floor}" if b.parent else "")
                + ")"
                for b in found.branches
            )
            await answer(
                interaction,
                f"Session `{found.key.platform}/{found.key.realm}/{found.key.key}`\n"
                f"Character: {found.character or '—'} · Preset: {found.preset or '—'} · "
                f"World books: {', '.join(found.worldbooks) or '—'}\n"
                f"Settings: {settings_line(found, binding.policy)}\n"
                f"This branch: `{place.branch}` · Branches: {branches}\n"
                + (f"{group_line(found)}\n" if found.members else "")
                + f"{summarize_note(found.author_note)}",
            )

    add_session_set(deps, group)

    @group.command(name="export", description="This branch as a SillyTavern chat (JSONL)")
    @app_commands.describe(
        include_hidden="Also the floors hidden by deleting their messages, marked hidden "
        "(is_system) as SillyTavern marks them (default: yes)"
    )
    async def export(interaction: discord.Interaction, include_hidden: bool = True) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            await require_binding(deps, place)
            await interaction.response.defer(ephemeral=True, thinking=True)
            # Deleting a message only hides its floor or page: the export keeps it by default.
            data = await service.export_chat(
                place.key, place.branch, include_hidden=include_hidden
            )
            name = f"{place.key.key}-{place.branch}.jsonl"
            shown = "with" if include_hidden else "without"
            await answer(
                interaction,
                f"Exported branch `{place.branch}` ({shown} hidden floors).",
                file=as_file(name, data),
            )

    @group.command(name="note", description="Show or set the Author's Note (setting: game master)")
    @app_commands.describe(
        text="The note's text (its macros expand in the prompt)",
        depth="In the chat: how many messages from the end it sits",
        interval="Insert it every N user messages (0: never, 1: every turn)",
        position="In the chat at a depth, or after / before the main prompt",
        role="The role of the note in the chat",
        clear="Remove the note",
    )
    async def note(
        interaction: discord.Interaction,
        text: str | None = None,
        depth: app_commands.Range[int, 0, MAX_NOTE_DEPTH] | None = None,
        interval: app_commands.Range[int, 0, MAX_NOTE_INTERVAL] | None = None,
        position: PositionChoice | None = None,
        role: Role | None = None,
        clear: bool = False,
    ) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            changes = (text, depth, interval, position, role)
            if not clear and all(value is None for value in changes):
                await require_binding(deps, place)
                found = await service.author_note(place.key)
                hint = "" if found else " A game master can set one: `/session note text:…`."
                await answer(interaction, describe_note(found) + hint)
                return
            require_game_master(deps, interaction)
            await require_binding(deps, place)
            if clear:
                if any(value is not None for value in changes):
                    raise CommandRefused("Use `clear` on its own.")
                await service.set_author_note(place.key, None)
                await answer(interaction, "Author's Note cleared.")
                return
            current = await service.author_note(place.key)
            if current is None and text is None:
                raise CommandRefused(
                    f"{NO_NOTE_TO_CHANGE}; set one with its text: `/session note text:…`."
                )
            found = current or AuthorNote()
            changed = replace(
                found,
                text=found.text if text is None else text.strip(),
                depth=found.depth if depth is None else depth,
                interval=found.interval if interval is None else interval,
                position=found.position if position is None else POSITIONS[position],
                role=found.role if role is None else ROLES[role],
            )
            await service.set_author_note(place.key, changed)
            await answer(interaction, f"Set. {describe_note(changed)}")

    @group.command(
        name="tools", description="Show or set what the model's tools may write (game master)"
    )
    @app_commands.describe(
        global_writes="Let the model's tools write global variables, which every session of "
        "this server sees (default: no)"
    )
    async def tools(interaction: discord.Interaction, global_writes: bool | None = None) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            if global_writes is None:
                await require_binding(deps, place)
                allowed = await service.tools_global_writes(place.key)
                await answer(interaction, _tool_scopes(allowed))
                return
            require_game_master(deps, interaction)
            await require_binding(deps, place)
            await service.set_tools_global_writes(place.key, global_writes)
            await answer(interaction, f"Set. {_tool_scopes(global_writes)}")

    @group.command(name="reset", description="Start over on a fresh main branch (game master)")
    async def reset(interaction: discord.Interaction) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            require_game_master(deps, interaction)
            await require_binding(deps, place)
            await service.reset(place.key)
            deps.sessions.forget(place.key)
            deps.turns.forget_session(place.key)
            await answer(interaction, "The story starts over. Earlier floors are kept, hidden.")

    return group


def _tool_scopes(global_writes: bool) -> str:
    if global_writes:
        return "The model's tools may write page, floor, branch, chat and global variables."
    return (
        "The model's tools may write page, floor, branch and chat variables "
        "(global: refused; a game master can allow it with `/session tools global_writes:True`)."
    )


def build_persona(deps: CommandDeps) -> app_commands.Group:
    """``/persona set name description`` and ``/persona show`` (your own, per guild)."""
    group = app_commands.Group(name="persona", description="Who you play in this server")

    @group.command(name="set", description="Your character's name (and description) here")
    async def set_(interaction: discord.Interaction, name: str, description: str = "") -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            if not name.strip():
                raise CommandRefused("A persona needs a name.")
            await deps.personas.set(place.key, str(interaction.user.id), name, description)
            await answer(interaction, f"You play **{name.strip()}** in this server now.")

    @group.command(name="show", description="Your persona here")
    async def show(interaction: discord.Interaction) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            await deps.personas.load(place.key, [str(interaction.user.id)])
            found = deps.personas.describe(place.key.realm, str(interaction.user.id))
            if found is None:
                await answer(interaction, "No persona: you play under your display name.")
                return
            await answer(interaction, f"**{found[0]}** — {found[1] or 'no description'}")

    return group


def build_tools(deps: CommandDeps) -> list[app_commands.Command[Any, ..., None]]:
    """``/preview text`` and ``/dryrun [text]``."""
    service = deps.service

    @app_commands.command(name="preview", description="Evaluate macros in a text (nothing saved)")
    async def preview(interaction: discord.Interaction, text: str) -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            await require_binding(deps, place)
            shown = await service.preview(place.key, place.branch, text)
            await answer(interaction, shown or "(empty)")

    @app_commands.command(name="dryrun", description="The prompt the next reply would use")
    async def dryrun(interaction: discord.Interaction, text: str = "") -> None:
        async with guard(interaction):
            place = place_of_interaction(interaction)
            await require_binding(deps, place)
            await interaction.response.defer(ephemeral=True, thinking=True)
            found = await service.dry_run(place.key, place.branch, text)
            messages = found.get("messages", [])
            # Say what a reader of the file looks for first: the memory block and the tools.
            memory = any(m.get("identifier") == MEMORY_BLOCK for m in messages)
            notes = [f"memory block: {'yes' if memory else 'none'}"]
            if "tools" in found:
                notes.append(f"tools offered: {', '.join(map(str, found['tools'])) or 'none'}")
            await answer(
                interaction,
                f"Assembled prompt: {len(messages)} messages ({'; '.join(notes)}).",
                file=as_file("dryrun.json", found),
            )

    return [preview, dryrun]


def build_branch_here(deps: CommandDeps) -> app_commands.ContextMenu:
    """The message command "Branch from here": opens a thread that forks at that message."""

    async def branch_here(interaction: discord.Interaction, message: discord.Message) -> None:
        async with guard(interaction):
            place = place_of(message.channel, interaction.user.id)
            if place is None or place.is_thread:
                raise CommandRefused("Branch from a message in the channel, not in a thread.")
            await require_binding(deps, place)
            ref = await deps.service.resolve_message(place.key, str(message.id))
            # Only a bot reply pins the fork point; any other message forks at the latest floor.
            pinned = ref is not None and ref.role == "assistant"
            label = f"floor {ref.floor}" if ref is not None and pinned else "latest floor"
            name = f"Branch from {label}"[:THREAD_NAME_LIMIT]
            try:
                thread = await message.create_thread(name=name)
            except discord.HTTPException as exc:
                if exc.code == EXISTING_THREAD:
                    raise CommandRefused("That message already has a branch.") from exc
                raise
            thread_place = place_of(thread, interaction.user.id)
            binding = await require_binding(deps, place)
            assert thread_place is not None
            await deps.sessions.ensure_branch(thread_place, binding)
            await answer(interaction, f"🌿 Branch {thread.mention} forks after the {label}.")

    return app_commands.ContextMenu(name="Branch from here", callback=branch_here)
