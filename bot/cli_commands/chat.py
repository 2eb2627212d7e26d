"""``tavernbot chat``: play in the terminal on the same engine and database as the bot.

Lines are messages; ``/help`` lists the commands. ``--jsonl`` prints one JSON object per
output line, so the console can be scripted through a pipe.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from bot.cli_commands import Subcommands
from engine.errors import FormatError
from engine.turns.api import AssetKind
from engine.turns.options import PROMPT_MODES, SWITCH_VALUES

MAX_FILE_BYTES = 64 * 1024 * 1024
"""A file given on the command line larger than this is refused."""


def register(sub: Subcommands) -> None:
    """Add the ``chat`` command."""
    parser = sub.add_parser("chat", help="play in the terminal")
    parser.add_argument("--session", default=None, help="session name (default from config)")
    parser.add_argument(
        "--character",
        type=Path,
        action="append",
        default=[],
        help="character card to import and play (repeatable: each further card joins a group)",
    )
    parser.add_argument(
        "--group",
        type=Path,
        help="SillyTavern group definition (groups/ID.json) naming the cards' group",
    )
    parser.add_argument("--preset", type=Path, help="Chat Completion preset to import")
    parser.add_argument(
        "--worldbook", type=Path, action="append", default=[], help="world book (repeatable)"
    )
    parser.add_argument("--user", default=None, help="your name ({{user}})")
    parser.add_argument("--jsonl", action="store_true", help="one JSON object per output line")
    parser.add_argument(
        "--mode", choices=PROMPT_MODES, help="prompt mode of the session (over [session])"
    )
    parser.add_argument(
        "--tools", choices=SWITCH_VALUES, help="offer the built-in tools to the model (on|off)"
    )
    parser.set_defaults(handler=_chat)


def _read(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None
    if len(data) > MAX_FILE_BYTES:
        raise FormatError(f"over MAX_FILE_BYTES={MAX_FILE_BYTES}", source=str(path))
    return data


def _chat(args: argparse.Namespace) -> int:
    from bot.app import chat
    from bot.cli import settings_from

    settings = settings_from(args)
    files: dict[AssetKind, list[tuple[str, bytes]]] = {}
    if args.character:
        files["card"] = [(p.name, _read(p)) for p in args.character]
    if args.preset:
        files["preset"] = [(args.preset.name, _read(args.preset))]
    if args.worldbook:
        files["worldbook"] = [(p.name, _read(p)) for p in args.worldbook]
    if args.group:  # after the cards: the group's members are cards of the realm
        files["group"] = [(args.group.name, _read(args.group))]
    # Set on the session as console ``/set mode`` and ``/set tools`` would (over [session]).
    options: dict[str, str] = {}
    if args.mode:
        options["mode"] = args.mode
    if args.tools:
        options["tools"] = args.tools
    return asyncio.run(
        chat(
            settings,
            session=args.session or settings.console.session,
            user=args.user or settings.console.user,
            jsonl=args.jsonl,
            files=files,
            options=options,
        )
    )
