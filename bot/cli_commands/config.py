"""``tavernbot config check``: validate the configuration and say what will run, and where
each value came from (the config file, an environment variable, or the default)."""

from __future__ import annotations

import argparse

from bot.cli_commands import Subcommands


def register(sub: Subcommands) -> None:
    """Add the ``config`` command group."""
    parser = sub.add_parser("config", help="inspect the configuration")
    inner = parser.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    check = inner.add_parser("check", help="validate the config file and environment")
    check.set_defaults(handler=_check)


def _check(args: argparse.Namespace) -> int:
    from bot.cli import settings_from
    from bot.config import database_location, describe_model

    settings = settings_from(args)
    platforms = [
        name
        for name, token in (
            ("discord", settings.discord.token),
            ("telegram", settings.telegram.token),
        )
        if token is not None
    ]
    print(f"config file: {settings.config_file or 'none (defaults and environment)'}")
    print(
        f"database: {database_location(settings.database.url)} "
        f"(from {settings.source('database', 'url')})"
    )
    print(f"model: {describe_model(settings)}")
    print(f"platforms: {', '.join(platforms) or 'none (console)'}")
    return 0
