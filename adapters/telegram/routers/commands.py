"""Slash commands: the command table, what every handler shares, and the commands that start,
describe (``/info``), play, branch, reset and export the story and read or set its variables.

The commands about what a session is made of (character, preset, world books, persona,
memories, Author's Note) are in :mod:`adapters.telegram.routers.asset_commands`.

Reads are open to every member; in groups, commands that change the session (binding,
variables, reset, branching, setting the Author's Note, the tools' write scopes) need admin
rights. Answers go to the chat (in a topic, to the topic) as escaped plain text, split at
Telegram's limit.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Final

from aiogram import Bot, Router
from aiogram.filters import Command, CommandObject, CommandStart
from aiogram.types import (
    BotCommand,
    BotCommandScopeAllChatAdministrators,
    BotCommandScopeAllGroupChats,
    BotCommandScopeAllPrivateChats,
    BufferedInputFile,
    Message,
)

from adapters.telegram.app import Frontend
from adapters.telegram.config import VALUE_SHOWN_CHARS, VARS_SHOWN
from adapters.telegram.context import Where
from adapters.telegram.convert import session_key
from adapters.telegram.keyboards import branches_keyboard
from adapters.telegram.sender import Place, send_plain
from engine.errors import EngineError
from engine.turns.api import MAIN_BRANCH, Scope, SessionInfo
from engine.turns.notes import summarize_note
from engine.turns.options import option_lines
from engine.variables.values import SCOPES

DRYRUN_PREVIEW_CHARS = 200
"""How much of each prompt message ``/dryrun`` shows."""
MEMORY_SHOWN = 20
"""How many memories one ``/memory`` answer lists."""

COMMANDS: dict[str, str] = {
    "start": "Start or bind the role-play session",
    "info": "Show the session: characters, preset, branches, Author's Note",
    "vars": "Show variables: /vars [page|floor|branch|chat|global]",
    "getvar": "Show one variable: /getvar name",
    "setvar": "Set a variable: /setvar name value [scope]",
    "delvar": "Delete a variable: /delvar name [scope]",
    "character": "Show the character (send a card file to change it)",
    "members": "Show the characters playing, who is muted, the strategy and mode",
    "add": "Add a character of this chat to the story: /add NAME",
    "remove": "Take a character out of the story: /remove NAME",
    "mute": "Mute a character (it answers only when called): /mute NAME",
    "unmute": "Let a muted character speak again: /unmute NAME",
    "strategy": "Who answers: /strategy natural|list|pooled|manual",
    "mode": "Cards in the prompt: /mode swap (the speaker's) | join (all)",
    "speak": "Make a character answer now: /speak NAME",
    "preset": "Show the preset (send a preset file to change it)",
    "worldbook": "Show the world books (send one as a file to add it)",
    "persona": "Who you are: /persona [Name | description] or /persona clear",
    "memory": "What the story remembers: /memory [search words]",
    "note": "Author's Note: /note, /note off, /note [depth=N] [role=NAME] text",
    "tools": "What the model's tools may write: /tools, /tools global on|off",
    "set": "Session settings: /set, /set OPTION VALUE (mode, tools, memory, budget, …)",
    "regen": "Regenerate the latest reply",
    "branch": "Reply to a message with /branch to fork the story there",
    "branches": "List branches and switch between them",
    "reset": "Start the story over",
    "export": "Export this branch as SillyTavern JSONL: /export [visible]",
    "preview": "Evaluate macros: /preview text",
    "dryrun": "Show the prompt a message would get: /dryrun text",
}
WRITES = frozenset(
    {
        "start",
        "setvar",
        "delvar",
        "reset",
        "branch",
        "tools",
        "add",
        "remove",
        "mute",
        "unmute",
        "strategy",
        "mode",
    }
)
GROUP_READS = (
    "info",
    "vars",
    "getvar",
    "character",
    "members",
    "speak",
    "preset",
    "worldbook",
    "persona",
    "memory",
    "note",
    "regen",
    "branches",
    "export",
    "preview",
    "dryrun",
)


def command_scopes() -> list[tuple[list[BotCommand], Any]]:
    """The command lists for setMyCommands: everything in private chats and for group admins,
    reading and playing commands for other group members."""
    every = [BotCommand(command=name, description=text) for name, text in COMMANDS.items()]
    group = [c for c in every if c.command in GROUP_READS]
    return [
        (every, BotCommandScopeAllPrivateChats()),
        (group, BotCommandScopeAllGroupChats()),
        (every, BotCommandScopeAllChatAdministrators()),
    ]


def as_scope(word: str) -> Scope | None:
    """The variable scope ``word`` names exactly, None when it names none."""
    for scope in SCOPES:
        if word == scope:
            return scope
    return None


def parse_value(text: str) -> Any:
    """A variable value typed in a command: JSON where it parses, else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def shown(value: Any) -> str:
    """A value as a command shows it, cut at VALUE_SHOWN_CHARS."""
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return text if len(text) <= VALUE_SHOWN_CHARS else text[:VALUE_SHOWN_CHARS] + "…"


UNUSED_OPTIONS: Final = frozenset({"policy"})
"""Session options Telegram has no use for (it answers every message of a bound chat), so
``/info`` and ``/set`` leave them out."""


def settings_lines(info: SessionInfo) -> list[str]:
    """``name = value`` for every session option Telegram uses, in ``/set``'s words."""
    lines = option_lines(info)
    return [f"{name} = {value}" for name, value in lines if name not in UNUSED_OPTIONS]


def group_lines(info: SessionInfo) -> list[str]:
    """The characters a session plays, as ``/members`` and ``/info`` show them: a group's
    members in list order (muted ones marked), its strategy and mode; or the one character."""
    if not info.members:
        who = info.character or "the default character"
        return [f"Character: {who}"]
    muted = set(info.muted)
    listed = ", ".join(f"{name} (muted)" if name in muted else name for name in info.members)
    return [
        f"Characters: {listed}",
        f"Strategy: {info.strategy}; mode: {info.group_mode}",
    ]


Handler = Callable[[Message, Bot, Where, CommandObject], Awaitable[None]]
"""A command handler: the message, the bot, where it was said, and the parsed command."""


class CommandRouter:
    """A Router for slash commands, with what their handlers share.

    :meth:`reply` answers in place (in a topic, to the topic); :meth:`command` registers a
    handler that runs only in a playable session and, for :data:`WRITES`, only for those who
    may change it.
    """

    def __init__(self, frontend: Frontend, name: str) -> None:
        self.frontend = frontend
        self.router = Router(name=name)

    async def reply(self, message: Message, bot: Bot, text: str, **kw: Any) -> None:
        """Answer ``message`` where it was said, as escaped plain text."""
        where_thread = message.message_thread_id if message.is_topic_message else None
        place = Place(
            chat_id=message.chat.id, thread_id=where_thread, private=message.chat.type == "private"
        )
        await send_plain(bot, place, text, **kw)

    def command(self, name: str) -> Callable[[Handler], Handler]:
        """Register a handler that runs in a playable session, with the write check."""
        frontend, reply = self.frontend, self.reply

        def register(handler: Handler) -> Handler:
            async def run(message: Message, bot: Bot, command: CommandObject) -> None:
                user = message.from_user
                if name in WRITES and not await frontend.may_write(
                    bot, message.chat, user.id if user else None
                ):
                    await reply(message, bot, f"Only group admins can use /{name} here.")
                    return
                where = await frontend.resolver.where(message, reply=False)
                if where.info is None:
                    await reply(
                        message, bot, "This group has no session yet: an admin can /start it."
                    )
                    return
                try:
                    await handler(message, bot, where, command)
                except EngineError as exc:
                    await reply(message, bot, f"⚠️ {exc}")

            self.router.message(Command(name))(run)
            return handler

        return register


def build(frontend: Frontend) -> Router:
    """The router for /start and the commands that play the story, fork it, reset it, export
    it and look at its variables and prompt (the rest of :data:`COMMANDS` is in
    :mod:`adapters.telegram.routers.asset_commands`)."""
    commands = CommandRouter(frontend, "telegram-commands")
    router, reply, command = commands.router, commands.reply, commands.command
    service = frontend.service

    @router.message(CommandStart())
    async def start(message: Message, bot: Bot) -> None:
        user = message.from_user
        if not await frontend.may_write(bot, message.chat, user.id if user else None):
            await reply(message, bot, "Only group admins can start a session here.")
            return
        info = await service.open_session(session_key(message.chat))
        who = info.character or "the default character"
        await reply(
            message,
            bot,
            f"Session ready: you are playing with {who}. Write to start the story; send a "
            "character card (PNG or JSON) as a file to change the character. /vars, /branches "
            "and the buttons under each reply let you look around.",
        )
        if user is not None:
            await frontend.turns.greet(
                bot, await frontend.resolver.where(message, reply=False), user.full_name
            )

    @command("info")
    async def info(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        found = await service.session_info(where.key)
        branches = ", ".join(
            f"{b.name} ({b.floors_text}"
            + (f", from {b.parent} after {b.fork_floor}" if b.parent else "")
            + ")"
            for b in found.branches
        )
        await reply(
            message,
            bot,
            "\n".join(group_lines(found)) + "\n"
            f"Preset: {found.preset or 'none (built-in prompt)'}\n"
            f"World books: {', '.join(found.worldbooks) or 'none'}\n"
            f"Branch: {where.branch}; branches: {branches}\n"
            "Settings (/set changes them):\n"
            + "\n".join(settings_lines(found))
            + f"\n{summarize_note(found.author_note)}",
        )

    @command("vars")
    async def vars_(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        word = (cmd.args or "").strip().lower()
        scope = as_scope(word)
        if word and scope is None:
            await reply(message, bot, f"Unknown scope {word!r}; use one of {', '.join(SCOPES)}.")
            return
        values = await service.variables(where.key, where.branch, scope)
        title = f"{scope} scope" if scope else "merged view"
        if not values:
            await reply(message, bot, f"No variables ({title}, branch {where.branch}).")
            return
        lines = [f"{name} = {shown(values[name])}" for name in sorted(values)[:VARS_SHOWN]]
        more = len(values) - VARS_SHOWN
        if more > 0:
            lines.append(f"… and {more} more")
        await reply(
            message, bot, f"Variables ({title}, branch {where.branch}):\n" + "\n".join(lines)
        )

    @command("getvar")
    async def getvar(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        name = (cmd.args or "").strip()
        if not name:
            await reply(message, bot, "Usage: /getvar name")
            return
        values = await service.variables(where.key, where.branch)
        if name not in values:
            await reply(message, bot, f"{name} is not set on branch {where.branch}.")
            return
        history = await service.variable_history(where.key, where.branch, name)
        lines = [f"{name} = {shown(values[name])}"]
        for write in history[-5:]:
            at = f" (floor {write.floor}, page {write.page})" if write.floor else ""
            lines.append(f"  {write.scope}: {shown(write.value)}{at}")
        await reply(message, bot, "\n".join(lines))

    @command("setvar")
    async def setvar(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        tokens = (cmd.args or "").split()
        if len(tokens) < 2:
            await reply(message, bot, "Usage: /setvar name value [scope]")
            return
        scope: Scope = "chat"
        named = as_scope(tokens[-1].lower()) if len(tokens) >= 3 else None
        if named is not None:
            scope = named
            tokens.pop()
        name, value = tokens[0], parse_value(" ".join(tokens[1:]))
        await service.set_variable(where.key, where.branch, name, value, scope)
        await reply(message, bot, f"Set {name} = {shown(value)} ({scope} scope).")

    @command("delvar")
    async def delvar(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        tokens = (cmd.args or "").split()
        scope = as_scope(tokens[1]) if len(tokens) == 2 else "chat"
        if not tokens or len(tokens) > 2 or scope is None:
            await reply(message, bot, "Usage: /delvar name [scope]")
            return
        await service.delete_variable(where.key, where.branch, tokens[0], scope)
        await reply(message, bot, f"Deleted {tokens[0]} ({scope} scope).")

    @command("regen")
    async def regen(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        await frontend.turns.regenerate(bot, where)

    @command("branch")
    async def branch(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        if not where.private:
            await reply(message, bot, "In groups, open a forum topic to branch the story.")
            return
        target = message.reply_to_message
        source, after = where.branch, None
        if target is not None:
            ref = await service.resolve_message(where.key, str(target.message_id))
            if ref is None:
                await reply(message, bot, "That message is not part of the story.")
                return
            source, after = ref.branch, ref.floor
        info = await service.session_info(where.key)
        name = f"b{len(info.branches) + 1}"
        created = await service.fork(where.key, source, after_floor=after, name=name)
        await frontend.state.switch_branch(where.key, created.name)
        at = f"after floor {created.fork_floor}" if created.fork_floor is not None else "here"
        await reply(
            message,
            bot,
            f"Branched {at}: now on branch {created.name} (from "
            f"{source}). /branches switches back.",
        )

    @command("branches")
    async def branches(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        info = await service.session_info(where.key)
        if not where.private:
            names = ", ".join(b.name for b in info.branches)
            await reply(message, bot, f"Branches (one per forum topic): {names}.")
            return
        await reply(
            message,
            bot,
            f"Branches (now on {where.branch}); tap one to switch:",
            markup=branches_keyboard(info.branches, where.branch),
        )

    @command("reset")
    async def reset(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        await service.reset(where.key)
        frontend.state.forget(where.key)
        frontend.resolver.forget(where.key)
        if where.private:
            await frontend.state.switch_branch(where.key, MAIN_BRANCH)
        await reply(message, bot, "The story starts over (the old floors are kept, hidden).")

    @command("export")
    async def export(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        # Deleted messages only hid their floors: the export keeps them (marked hidden, as
        # SillyTavern marks hidden messages) unless asked for the visible floors only.
        include_hidden = (cmd.args or "").strip().lower() != "visible"
        data = await service.export_chat(where.key, where.branch, include_hidden=include_hidden)
        name = f"chat-{message.chat.id}-{where.branch}.jsonl"
        shown = "hidden floors included" if include_hidden else "visible floors only"
        await bot.send_document(
            message.chat.id,
            BufferedInputFile(data, filename=name),
            caption=f"Branch {where.branch} as SillyTavern JSONL ({shown}).",
            message_thread_id=where.place.thread_id,
        )

    @command("preview")
    async def preview(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        if not cmd.args:
            await reply(message, bot, "Usage: /preview text with {{macros}}")
            return
        await reply(message, bot, await service.preview(where.key, where.branch, cmd.args))

    @command("dryrun")
    async def dryrun(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        result = await service.dry_run(where.key, where.branch, cmd.args or "")
        messages = list(result.get("messages") or [])
        lines = [f"Prompt for this message: {len(messages)} messages"]
        for item in messages:
            content = str(item.get("content", ""))
            if len(content) > DRYRUN_PREVIEW_CHARS:
                content = content[:DRYRUN_PREVIEW_CHARS] + "…"
            # The long-term memory block is its own system message: say which one it is.
            label = ", memory" if item.get("identifier") == "memory" else ""
            lines.append(f"[{item.get('role', '?')}{label}] {content}")
        if "tools" in result:
            lines.append(f"tools offered: {', '.join(map(str, result['tools'])) or 'none'}")
        for key in ("budget", "tokens", "warnings"):
            if key in result:
                lines.append(f"{key}: {shown(result[key])}")
        await reply(message, bot, "\n".join(lines))

    return router
