"""``tavernbot db upgrade``: bring the configured database to the newest schema."""

from __future__ import annotations

import argparse

from bot.cli_commands import Subcommands


def register(sub: Subcommands) -> None:
    """Add the ``db`` command group."""
    parser = sub.add_parser("db", help="manage the database")
    inner = parser.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    upgrade = inner.add_parser("upgrade", help="apply every pending migration")
    upgrade.set_defaults(handler=_upgrade)


def _upgrade(args: argparse.Namespace) -> int:
    from adapters.storage import upgrade
    from bot.cli import settings_from

    settings = settings_from(args)
    upgrade(settings.database.url)
    print(f"database is up to date: {_redact(settings.database.url)}")
    return 0


def _redact(url: str) -> str:
    """The URL without its password, for printing."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)
