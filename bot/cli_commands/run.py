"""``tavernbot run``: every configured platform in one process (the console when none is)."""

from __future__ import annotations

import argparse
import asyncio

from bot.cli_commands import Subcommands


def register(sub: Subcommands) -> None:
    """Add the ``run`` command."""
    parser = sub.add_parser("run", help="run the bot on every configured platform")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from bot.app import run
    from bot.cli import settings_from

    return asyncio.run(run(settings_from(args)))
