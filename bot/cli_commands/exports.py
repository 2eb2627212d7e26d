"""``tavernbot export chat|group|card|preset|worldbook|regex``: write sessions and assets out.

- ``export chat --session NAME [--branch main] [--format jsonl|native] [--no-include-hidden]
  [-o FILE]``: one branch as SillyTavern JSONL (the turn service's export; floors and pages
  hidden by a deleted message or a reset are kept, marked ``is_system`` as SillyTavern marks
  hidden messages, unless ``--no-include-hidden``; an imported chat comes back line for line,
  with the current chat-scope variables in ``chat_metadata.variables``), or the whole session
  as a native archive
  (every branch, page, variable and memory record; see :mod:`engine.formats.archive`).
- ``export group --session NAME [--out FILE]``: the session's group as a SillyTavern group
  definition (``groups/<id>.json``): an imported one with every field it had and the current
  members, muted members, strategy and mode.
- ``export card NAME [--png]``: the card as SillyTavern JSON, or as a PNG with ``chara`` and
  ``ccv3`` chunks when the stored card has a picture (imported from a PNG) or ``--png`` is
  given (a blank picture then).
- ``export preset|worldbook|regex NAME``: the JSON as it was imported (regex: a list).

Without ``-o`` (``--out``) the file goes to standard output.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from bot.cli_commands import Subcommands
from bot.cli_commands.imports import CONSOLE, DEFAULT_REALM, open_service, realm_id_of
from engine.formats.archive import archive_to_bytes
from engine.formats.cards import card_from_asset, card_to_json_bytes, card_to_png
from engine.timeline.values import AssetKind

if TYPE_CHECKING:
    from bot.config import Settings

KINDS: Final = ("chat", "group", "card", "preset", "worldbook", "regex")
SESSION_KINDS: Final = ("chat", "group")
"""The kinds exported from a session (``--session``), not from the realm's assets."""
FORMATS: Final = ("jsonl", "native")


def register(sub: Subcommands) -> None:
    """Add the ``export`` command."""
    parser = sub.add_parser(
        "export", help="export a chat (JSONL or native archive), a group or an asset"
    )
    parser.add_argument("kind", choices=KINDS, help="what to export")
    parser.add_argument("name", nargs="?", default=None, help="asset name (not for chat or group)")
    parser.add_argument("--session", default=None, help="console session (chat, group)")
    parser.add_argument("--platform", default=CONSOLE, help="session platform (chat)")
    parser.add_argument("--branch", default="main", help="branch (chat, jsonl)")
    parser.add_argument("--format", choices=FORMATS, default="jsonl", help="chat format")
    parser.add_argument(
        "--include-hidden",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="jsonl: keep hidden floors, marked is_system as SillyTavern marks them (default)",
    )
    parser.add_argument("--realm", default=DEFAULT_REALM, help="realm of the asset")
    parser.add_argument("--png", action="store_true", help="card as PNG even without a picture")
    parser.add_argument("-o", "--output", "--out", type=Path, default=None, help="file to write")
    parser.set_defaults(handler=_export)


def _export(args: argparse.Namespace) -> int:
    from bot.cli import EXIT_USAGE, settings_from

    if args.kind in SESSION_KINDS and not args.session:
        print(f"tavernbot: export {args.kind} needs --session NAME", file=sys.stderr)
        return EXIT_USAGE
    if args.kind not in SESSION_KINDS and not args.name:
        print(f"tavernbot: export {args.kind} needs the asset's NAME", file=sys.stderr)
        return EXIT_USAGE
    settings = settings_from(args)
    data = asyncio.run(_produce(settings, args))
    if args.output is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        try:
            args.output.write_bytes(data)
        except OSError as exc:
            print(f"tavernbot: {args.output}: cannot write: {exc.strerror}", file=sys.stderr)
            return 1
        print(f"wrote {len(data)} bytes to {args.output}", file=sys.stderr)
    return 0


async def _produce(settings: Settings, args: argparse.Namespace) -> bytes:
    from adapters.storage.archive_repo import SqlArchiveRepository
    from engine.timeline.assets import AssetService
    from engine.turns.api import SessionKey

    async with open_service(settings) as (storage, service):
        if args.kind == "chat":
            if args.format == "native":
                archive = await SqlArchiveRepository(storage).export_session(
                    args.platform, args.session, now=datetime.now(UTC)
                )
                return archive_to_bytes(archive)
            key = SessionKey(platform=args.platform, realm=args.realm, key=args.session)
            return await service.export_chat(key, args.branch, include_hidden=args.include_hidden)
        if args.kind == "group":
            key = SessionKey(platform=args.platform, realm=args.realm, key=args.session)
            return await service.export_group(key)
        realm_id = await realm_id_of(storage, args.realm, create=False)
        kind: AssetKind = args.kind
        asset = await AssetService(storage).get(realm_id, kind, args.name)
        return asset_bytes(kind, asset.name, asset.data, png=args.png)


def asset_bytes(kind: str, name: str, data: Mapping[str, Any], *, png: bool = False) -> bytes:
    """The file of a stored asset (see the module docstring)."""
    if kind == "card":
        card = card_from_asset(data, source=name)
        if card.avatar is not None or png:
            return card_to_png(card)
        return card_to_json_bytes(card)
    value: object = data
    if kind == "regex":
        value = data.get("scripts", [])
    return json.dumps(value, ensure_ascii=False, indent=4).encode("utf-8")
