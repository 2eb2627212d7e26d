"""``tavernbot db upgrade``: bring the configured database to the newest schema."""

from __future__ import annotations

import argparse
import asyncio

from bot.cli_commands import Subcommands


def register(sub: Subcommands) -> None:
    """Add the ``db`` command group."""
    parser = sub.add_parser("db", help="manage the database")
    inner = parser.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    upgrade = inner.add_parser("upgrade", help="apply every pending migration")
    upgrade.set_defaults(handler=_upgrade)


def _upgrade(args: argparse.Namespace) -> int:
    from bot.cli import settings_from

    settings = settings_from(args)
    print(asyncio.run(upgrade_database(settings.database.url)))
    return 0


async def upgrade_database(url: str) -> str:
    """Migrate database ``url`` to the newest schema; returns what was done, in one line
    (UnavailableError when the database cannot be opened)."""
    from adapters.storage import create_engine
    from adapters.storage.migrate import current_revision, head_revision, upgrade_engine
    from bot.startup import database_errors, shown_url

    shown = shown_url(url)
    head = head_revision()
    with database_errors(url):
        engine = create_engine(url)
        try:
            before = await current_revision(engine)
            if before != head:
                await upgrade_engine(engine)
        finally:
            await engine.dispose()
    if before is None:
        return f"created the database at {shown} (schema {head})"
    if before == head:
        return f"database is up to date: {shown} (schema {head})"
    return f"upgraded the database at {shown} from schema {before} to {head}"
