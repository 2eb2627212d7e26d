"""Group role-play commands: who plays in the chat's session and who answers.

``/members`` lists the characters (muted ones marked), the strategy and the mode; ``/add``,
``/remove``, ``/mute``, ``/unmute``, ``/strategy`` and ``/mode`` change the group (admins only
in groups, as every write); ``/speak NAME`` makes a member answer now (anyone may, as anyone
may ``/regen``). A name is found ignoring case; a name that is not a member (or, for ``/add``,
not a card of the chat) gets one line naming the members (or the chat's cards).
"""

from __future__ import annotations

from typing import Final

from aiogram import Bot, Router
from aiogram.filters import CommandObject
from aiogram.types import Message

from adapters.telegram.app import Frontend
from adapters.telegram.context import Where
from adapters.telegram.routers.commands import CommandRouter, group_lines
from engine.group.settings import GENERATION_MODES, STRATEGIES
from engine.turns.api import SessionInfo
from engine.turns.members import find_name

NO_GROUP: Final = "This chat plays one character ({name}); /add NAME makes a group."


def _characters(info: SessionInfo) -> tuple[str, ...]:
    """The characters the session plays: its members, or its one character."""
    if info.members:
        return info.members
    return (info.character,) if info.character else ()


def _not_a_member(name: str, info: SessionInfo) -> str:
    listed = ", ".join(_characters(info)) or "none yet"
    return f"{name} does not play here; the characters are: {listed}."


def build(frontend: Frontend) -> Router:
    """The router for /members, /add, /remove, /mute, /unmute, /strategy, /mode, /speak."""
    commands = CommandRouter(frontend, "telegram-group-commands")
    reply, command = commands.reply, commands.command
    service, state = frontend.service, frontend.state

    async def changed(message: Message, bot: Bot, info: SessionInfo, done: str) -> None:
        state.note_group(info)
        await reply(message, bot, f"{done}\n" + "\n".join(group_lines(info)))

    async def member_named(
        message: Message, bot: Bot, where: Where, cmd: CommandObject, usage: str
    ) -> tuple[SessionInfo, str] | None:
        """The session and the member the command's argument names (None: answered)."""
        name = (cmd.args or "").strip()
        if not name:
            await reply(message, bot, f"Usage: {usage}")
            return None
        info = await service.session_info(where.key)
        found = find_name(_characters(info), name)
        if found is None:
            await reply(message, bot, _not_a_member(name, info))
            return None
        return info, found

    @command("members")
    async def members(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        info = await service.session_info(where.key)
        state.note_group(info)
        hint = "" if info.members else "\n/add NAME adds another character to make a group."
        await reply(message, bot, "\n".join(group_lines(info)) + hint)

    @command("add")
    async def add(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        name = (cmd.args or "").strip()
        if not name:
            await reply(message, bot, "Usage: /add NAME (a character card sent to this chat)")
            return
        cards = await service.list_assets(where.key, "card")
        card = find_name(cards, name)
        if card is None:
            listed = ", ".join(sorted(cards)) or "none yet"
            await reply(
                message,
                bot,
                f"No card named {name} in this chat; its cards: {listed} (send a card file "
                "to add one).",
            )
            return
        info = await service.add_member(where.key, card)
        await changed(message, bot, info, f"{card} joins the story.")

    @command("remove")
    async def remove(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        found = await member_named(message, bot, where, cmd, "/remove NAME")
        if found is not None:
            info = await service.remove_member(where.key, found[1])
            await changed(message, bot, info, f"{found[1]} leaves the story.")

    async def mute(message: Message, bot: Bot, where: Where, cmd: CommandObject, on: bool) -> None:
        verb = "mute" if on else "unmute"
        found = await member_named(message, bot, where, cmd, f"/{verb} NAME")
        if found is None:
            return
        info, name = found
        if not info.members:
            await reply(message, bot, NO_GROUP.format(name=name))
            return
        info = await service.mute_member(where.key, name, on)
        done = (
            f"{name} is muted: it answers only when called with /speak {name}."
            if on
            else f"{name} speaks again."
        )
        await changed(message, bot, info, done)

    @command("mute")
    async def mute_(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        await mute(message, bot, where, cmd, True)

    @command("unmute")
    async def unmute(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        await mute(message, bot, where, cmd, False)

    async def group_setting(
        message: Message, bot: Bot, where: Where, cmd: CommandObject, what: str
    ) -> None:
        """``/strategy`` and ``/mode``: one of the words ``what`` takes."""
        words = STRATEGIES if what == "strategy" else GENERATION_MODES
        word = (cmd.args or "").strip().lower()
        if word not in words:
            await reply(message, bot, f"Usage: /{what} {'|'.join(words)}")
            return
        info = await service.session_info(where.key)
        if not info.members:
            await reply(message, bot, NO_GROUP.format(name=info.character or "none yet"))
            return
        if what == "strategy":
            info = await service.set_group_strategy(where.key, word)
        else:
            info = await service.set_group_mode(where.key, word)
        await changed(message, bot, info, f"Set {what} = {word}.")

    @command("strategy")
    async def strategy(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        await group_setting(message, bot, where, cmd, "strategy")

    @command("mode")
    async def mode(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        await group_setting(message, bot, where, cmd, "mode")

    @command("speak")
    async def speak(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        found = await member_named(message, bot, where, cmd, "/speak NAME")
        if found is not None:
            state.note_group(found[0])
            await frontend.turns.speak(bot, where, found[1])

    return commands.router
