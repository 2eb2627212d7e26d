"""``tavernbot config check``: validate the configuration and say what will run, and where
each value came from (the config file, an environment variable, or the default)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from bot.cli_commands import Subcommands

if TYPE_CHECKING:
    from bot.config import Settings


def register(sub: Subcommands) -> None:
    """Add the ``config`` command group."""
    parser = sub.add_parser("config", help="inspect the configuration")
    inner = parser.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    check = inner.add_parser("check", help="validate the config file and environment")
    check.set_defaults(handler=_check)


def _check(args: argparse.Namespace) -> int:
    from bot.cli import settings_from
    from bot.config import database_location, describe_embeddings, describe_model

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
    print(f"embeddings: {describe_embeddings(settings)}")
    print(f"platforms: {', '.join(platforms) or 'none (console)'}")
    _web_lines(settings)
    return 0


def _web_lines(settings: Settings) -> None:
    """Where the web page listens, and the warning when it is reachable in clear text."""
    from bot.web import web_warning

    web = settings.web
    if not web.enabled:
        print("web: off ([web] enabled = false)")
        return
    scheme = "https" if web.tls_cert else "http"
    proxy = " behind a reverse proxy" if web.behind_proxy else ""
    print(f"web: {scheme}://{web.host}:{web.port}/{proxy}")
    warning = web_warning(settings)
    if warning:
        print(f"warning: {warning}")
