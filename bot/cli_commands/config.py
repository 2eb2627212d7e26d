"""``tavernbot config check``: validate the configuration and say what will run."""

from __future__ import annotations

import argparse

from bot.cli_commands import Subcommands
from engine.redaction import redact_url


def register(sub: Subcommands) -> None:
    """Add the ``config`` command group."""
    parser = sub.add_parser("config", help="inspect the configuration")
    inner = parser.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    check = inner.add_parser("check", help="validate the config file and environment")
    check.set_defaults(handler=_check)


def _check(args: argparse.Namespace) -> int:
    from bot.cli import settings_from

    settings = settings_from(args)
    platforms = [
        name
        for name, token in (
            ("discord", settings.discord.token),
            ("telegram", settings.telegram.token),
        )
        if token is not None
    ]
    print(f"database: {redact_url(settings.database.url)}")
    base_url = settings.llm.base_url
    print(
        "model: offline provider"
        if settings.uses_offline_model or base_url is None
        else f"model: {settings.llm.model} at {redact_url(base_url)}"
    )
    print(f"platforms: {', '.join(platforms) or 'none (console)'}")
    return 0
