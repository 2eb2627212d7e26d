"""Slash commands about what a session is made of: its character, preset and world books (sent
as files to change them), your persona, what the story remembers, the Author's Note and what
the model's tools may write.

They share the plumbing of :class:`adapters.telegram.routers.commands.CommandRouter`: reads are
open to every member; in groups, setting the Author's Note needs admin rights, and ``/tools``
is for admins only (global variables are shared by every session of the chat's realm).
"""

from __future__ import annotations

from aiogram import Bot, Router
from aiogram.filters import CommandObject
from aiogram.types import Message

from adapters.telegram.app import Frontend
from adapters.telegram.context import Where
from adapters.telegram.routers.commands import MEMORY_SHOWN, CommandRouter, shown
from engine.turns.notes import USAGE, describe_note, parse_note_command


def build(frontend: Frontend) -> Router:
    """The router for /character, /preset, /worldbook, /persona, /memory, /note and /tools."""
    commands = CommandRouter(frontend, "telegram-asset-commands")
    reply, command = commands.reply, commands.command
    service = frontend.service

    @command("character")
    async def character(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        info = await service.session_info(where.key)
        await reply(
            message,
            bot,
            f"Character: {info.character or 'the default character'}.\n"
            "Send a card (PNG or JSON) as a file to change it.",
        )

    @command("preset")
    async def preset(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        info = await service.session_info(where.key)
        await reply(
            message,
            bot,
            f"Preset: {info.preset or 'none (built-in prompt)'}; prompt "
            f"mode {info.prompt_mode}.\nSend a preset JSON as a file to change it.",
        )

    @command("worldbook")
    async def worldbook(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        info = await service.session_info(where.key)
        books = ", ".join(info.worldbooks) or "none"
        await reply(
            message, bot, f"World books: {books}.\nSend a world book JSON as a file to add it."
        )

    @command("persona")
    async def persona(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        user = message.from_user
        fallback = user.full_name if user else "you"
        if user is None:
            # A channel post has no author to give a persona to.
            await reply(message, bot, f"You play as {fallback} ({{{{user}}}}).")
            return
        args = (cmd.args or "").strip()
        user_id = str(user.id)
        if not args:
            found = await service.persona(where.key, user_id)
            if found is None:
                await reply(
                    message,
                    bot,
                    f"You play as {fallback} ({{{{user}}}}). Set a persona with "
                    "/persona Name | description, drop it with /persona clear.",
                )
                return
            name, description = found
            about = f"\n{description}" if description else ""
            await reply(message, bot, f"You play as {name} ({{{{user}}}}).{about}")
            return
        if args.lower() == "clear":
            await service.clear_persona(where.key, user_id)
            await reply(message, bot, f"Persona dropped: you play as {fallback} again.")
            return
        name, _, description = args.partition("|")
        await service.set_persona(where.key, user_id, name.strip(), description.strip())
        await reply(message, bot, f"Persona set: you play as {name.strip()} in this chat.")

    @command("memory")
    async def memory(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        query = (cmd.args or "").strip() or None
        found = await service.memories(where.key, where.branch, query=query, limit=MEMORY_SHOWN)
        if not found:
            await reply(message, bot, f"No memories yet (branch {where.branch}).")
            return
        lines = [f"• [{m.kind}, {m.scope}, {m.importance:.1f}] {shown(m.text)}" for m in found]
        title = f"matching {query!r}" if query else "newest first"
        await reply(
            message, bot, f"Memories ({title}, branch {where.branch}):\n" + "\n".join(lines)
        )

    @command("note")
    async def note(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        args = (cmd.args or "").strip()
        if not args:
            found = await service.author_note(where.key)
            hint = "" if found else f" ({USAGE})"
            await reply(message, bot, describe_note(found) + hint)
            return
        # Showing is open to members; changing the note changes every turn, like /setvar.
        user = message.from_user
        if not await frontend.may_write(bot, message.chat, user.id if user else None):
            await reply(message, bot, "Only group admins can change the Author's Note here.")
            return
        parsed = parse_note_command(args, await service.author_note(where.key))
        if parsed.action == "clear":
            await service.set_author_note(where.key, None)
            await reply(message, bot, "Author's Note cleared.")
            return
        await service.set_author_note(where.key, parsed.note)
        await reply(message, bot, f"Set. {describe_note(parsed.note)}")

    @command("tools")
    async def tools(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        words = (cmd.args or "").lower().split()
        if not words:
            await reply(message, bot, _tool_scopes(await service.tools_global_writes(where.key)))
            return
        if len(words) != 2 or words[0] != "global" or words[1] not in _SWITCH:
            await reply(message, bot, "Usage: /tools, /tools global on, /tools global off")
            return
        allowed = _SWITCH[words[1]]
        await service.set_tools_global_writes(where.key, allowed)
        await reply(message, bot, f"Set. {_tool_scopes(allowed)}")

    return commands.router


_SWITCH = {"on": True, "off": False}


def _tool_scopes(global_writes: bool) -> str:
    if global_writes:
        return "The model's tools may write page, floor, branch, chat and global variables."
    return (
        "The model's tools may write page, floor, branch and chat variables "
        "(global: refused; an admin can allow it with /tools global on)."
    )
