"""One error boundary for command bodies: refusals and engine errors become ephemeral answers.

Used as ``async with guard(interaction):`` around a command's body (a decorator would hide the
callback's own module from discord.py, which resolves option annotations in it).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import discord

from adapters.discord.commands.context import CommandRefused, answer
from engine.errors import EngineError

_log = logging.getLogger(__name__)


@contextlib.asynccontextmanager
async def guard(interaction: discord.Interaction) -> AsyncIterator[None]:
    """Answer CommandRefused and EngineError messages instead of failing the interaction."""
    try:
        yield
    except CommandRefused as exc:
        await answer(interaction, f"⛔ {exc}")
    except EngineError as exc:
        _log.info("command refused by the engine: %s", exc)
        await answer(interaction, f"⚠️ {exc}")
