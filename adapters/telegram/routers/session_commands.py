"""``/set``: a session's settings, under the option names every front end shares.

``/set`` alone lists every option with its current value and what it takes; ``/set OPTION``
shows one; ``/set OPTION VALUE`` changes it for this chat's session only (anyone in a private
chat, admins in a group). A bad option or value gets the engine's one-line error. ``/info``
shows the same values (:func:`adapters.telegram.routers.commands.settings_lines`).

Telegram answers every message of a bound chat, so it has no reply policy: ``policy`` is
neither shown nor set here (:data:`UNUSED_OPTIONS`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from aiogram import Bot, Router
from aiogram.filters import CommandObject
from aiogram.types import Message

from adapters.telegram.app import Frontend
from adapters.telegram.context import Where
from adapters.telegram.routers.commands import UNUSED_OPTIONS, CommandRouter
from engine.turns.api import SessionInfo
from engine.turns.options import OptionSpec, option_lines, option_spec

USAGE: Final = "Usage: /set, /set OPTION, /set OPTION VALUE"


def _described(info: SessionInfo, specs: Sequence[OptionSpec]) -> list[str]:
    """One line per option: its value, the values it takes and what it does."""
    values = dict(option_lines(info))
    lines = []
    for spec in specs:
        takes = " | ".join(spec.values) if spec.values else "a number"
        lines.append(f"{spec.name} = {values.get(spec.name, '?')} [{takes}]: {spec.help}")
    return lines


def build(frontend: Frontend) -> Router:
    """The router for /set."""
    commands = CommandRouter(frontend, "telegram-session-commands")
    reply, command = commands.reply, commands.command
    service = frontend.service

    def specs() -> list[OptionSpec]:
        return [s for s in service.session_option_specs() if s.name not in UNUSED_OPTIONS]

    @command("set")
    async def set_(message: Message, bot: Bot, where: Where, cmd: CommandObject) -> None:
        words = (cmd.args or "").split()
        if not words:
            info = await service.session_info(where.key)
            lines = _described(info, specs())
            await reply(
                message,
                bot,
                "Session settings (/set OPTION VALUE changes one):\n" + "\n".join(lines),
            )
            return
        if len(words) > 2:
            await reply(message, bot, USAGE)
            return
        spec = option_spec(words[0])  # an unknown option: the one-line error, listing them
        if spec.name in UNUSED_OPTIONS:
            await reply(
                message,
                bot,
                f"Telegram has no use for {spec.name}: the bot answers every message of a "
                "chat it plays in.",
            )
            return
        if len(words) == 1:
            info = await service.session_info(where.key)
            await reply(message, bot, _described(info, [spec])[0])
            return
        # Showing is open to members; a change changes every later turn, like /setvar.
        user = message.from_user
        if not await frontend.may_write(bot, message.chat, user.id if user else None):
            await reply(message, bot, "Only group admins can change session settings here.")
            return
        info = await service.set_session_option(where.key, spec.name, words[1])
        now = dict(option_lines(info))[spec.name]
        await reply(message, bot, f"Set {spec.name} = {now} (this chat only).")

    return commands.router
