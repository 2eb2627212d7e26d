"""``tavernbot web``: serve the web page alone (the engine, no platform), and ``tavernbot web
token``: issue a new access token and print it. Tokens are stored hashed, so an old one can
never be shown again: this command always makes a new one (``--read-only`` for a token that
cannot write, ``--realm PLATFORM:KEY`` for one that sees a single realm). ``--list`` shows the
stored tokens (label, kind, realm, created, last used; never a token) and ``--revoke LABEL``
deletes every token with that label."""

from __future__ import annotations

import argparse
import asyncio
from datetime import datetime
from typing import TYPE_CHECKING

from bot.cli_commands import Subcommands

if TYPE_CHECKING:
    from bot.config import Settings


def register(sub: Subcommands) -> None:
    """Add the ``web`` command and its ``token`` action."""
    parser = sub.add_parser("web", help="serve the web page alone, or issue an access token")
    parser.set_defaults(handler=_serve)
    inner = parser.add_subparsers(dest="web_command", metavar="ACTION")
    token = inner.add_parser(
        "token", help="issue a new access token and print it (old ones cannot be shown again)"
    )
    token.add_argument(
        "--read-only", action="store_true", help="a token that reads but never writes"
    )
    token.add_argument(
        "--realm",
        metavar="PLATFORM:KEY",
        help="the one realm it sees (e.g. discord:GUILD_ID, console:local); default: all",
    )
    token.add_argument("--label", default=None, help="a name to recognise it by")
    manage = token.add_mutually_exclusive_group()
    manage.add_argument(
        "--list", action="store_true", help="list the stored tokens instead of issuing one"
    )
    manage.add_argument(
        "--revoke", metavar="LABEL", help="delete every token with this label instead"
    )
    token.set_defaults(handler=_token)


def _serve(args: argparse.Namespace) -> int:
    from bot.cli import settings_from

    return asyncio.run(serve(settings_from(args)))


async def serve(settings: Settings) -> int:
    """Run the engine with only the web page until SIGINT/SIGTERM."""
    from contextlib import AsyncExitStack

    from bot.app import Application, SignalOwner, announce_setup
    from bot.config import ConfigError
    from bot.web import serve_web

    if not settings.web.enabled:
        raise ConfigError("[web] enabled is false: nothing to serve")
    announce_setup(settings)
    async with Application(settings) as app, AsyncExitStack() as stack:
        server = await serve_web(app, stack)
        if server is None:
            from engine.errors import UnavailableError

            raise UnavailableError(
                f"cannot serve the web page on {settings.web.host}:{settings.web.port}"
            )
        with SignalOwner() as signals:
            await signals.stop.wait()
    return 0


def _token(args: argparse.Namespace) -> int:
    from bot.cli import settings_from

    settings = settings_from(args)
    if args.list:
        print(asyncio.run(listing(settings.database.url)))
        return 0
    if args.revoke is not None:
        print(asyncio.run(revoke(settings.database.url, args.revoke)))
        return 0
    kind = "read" if args.read_only else "admin"
    print(asyncio.run(issue(settings.database.url, kind=kind, realm=args.realm, label=args.label)))
    return 0


async def issue(url: str, *, kind: str, realm: str | None, label: str | None) -> str:
    """A new token of ``kind`` for ``realm`` (``platform:key``; None: every realm), stored
    hashed in the database at ``url``; returns the token."""
    from adapters.storage.web_repo import SqlWebTokens
    from adapters.web.auth import CLI_TOKEN_LABEL, check_kind, issue_token
    from bot.config import ConfigError
    from bot.startup import open_database

    if realm is not None and (":" not in realm or not all(realm.partition(":")[::2])):
        raise ConfigError(f"--realm must be PLATFORM:KEY (e.g. console:local), not {realm!r}")
    storage = await open_database(url)
    try:
        return await issue_token(
            SqlWebTokens(storage),
            kind=check_kind(kind),
            realm=realm,
            label=(label or CLI_TOKEN_LABEL)[:100],
        )
    finally:
        await storage.close()


def _when(moment: datetime | None) -> str:
    return "never" if moment is None else moment.strftime("%Y-%m-%d %H:%M UTC")


async def listing(url: str) -> str:
    """The stored tokens of the database at ``url`` as a table (newest first)."""
    from adapters.storage.web_repo import SqlWebTokens
    from bot.startup import open_database

    storage = await open_database(url)
    try:
        tokens = await SqlWebTokens(storage).listed()
    finally:
        await storage.close()
    if not tokens:
        return "no web tokens (the first 'tavernbot run' or 'tavernbot web' issues one)"
    rows = [("LABEL", "KIND", "REALM", "CREATED", "LAST USED")]
    rows += [
        (t.label, t.kind, t.realm or "(all)", _when(t.created_at), _when(t.last_used_at))
        for t in tokens
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join([*(cell.ljust(w) for cell, w in zip(row, widths, strict=False)), row[-1]])
        for row in rows
    )


async def revoke(url: str, label: str) -> str:
    """Delete every token labelled ``label``; NotFoundError when none is."""
    from adapters.storage.web_repo import SqlWebTokens
    from bot.startup import open_database
    from engine.errors import NotFoundError

    storage = await open_database(url)
    try:
        count = await SqlWebTokens(storage).revoke(label)
    finally:
        await storage.close()
    if not count:
        raise NotFoundError(
            f"no web token is labelled {label!r} (see 'tavernbot web token --list')"
        )
    return f"revoked {count} web token{'' if count == 1 else 's'} labelled {label!r}"
