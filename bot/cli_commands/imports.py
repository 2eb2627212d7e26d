"""``tavernbot import card|preset|worldbook|regex|chat FILE``: bring SillyTavern files in.

- ``card``/``preset``/``worldbook``/``regex`` with ``--session NAME`` are stored in the realm
  and bound to console session NAME (created if needed), exactly as the chat front ends import
  them; without ``--session`` they are only stored in the realm (``--realm``, default
  ``local``), ready to be bound later.
- ``chat`` takes a SillyTavern JSONL chat or a native archive and creates a NEW console session
  (named by ``--session``, else by the file name) in one transaction. A JSONL chat keeps every
  field of every line (``export chat`` writes it back as it came) and its
  ``chat_metadata.variables`` become the session's chat-scope variables.

Every file is read and validated completely before the database is opened, so a malformed file
stops with exit code 1 and one message naming the file, the field and the problem, and nothing
is written. A card's picture is kept with the card (under :data:`AVATAR_KEY`, base64), so
``tavernbot export card`` can write the PNG back.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, get_args

from bot.cli_commands import Subcommands
from engine.errors import ConfigurationError, FormatError
from engine.formats.archive import Archive, looks_like_archive, parse_archive
from engine.formats.archive_st import archive_from_st_chat
from engine.formats.cards import card_to_asset, parse_card
from engine.formats.json_input import load_object
from engine.formats.preset import PRESET_OBJECT, parse_preset
from engine.formats.regex_scripts import load_regex_file
from engine.formats.st_chat import parse_chat
from engine.formats.st_group import parse_group
from engine.formats.worldbook import WORLDBOOK_OBJECT, parse_worldbook
from engine.timeline.checks import check_name
from engine.timeline.values import AssetKind
from engine.turns.api import AssetKind as ImportKind

if TYPE_CHECKING:
    from adapters.storage import SqlStorage
    from bot.config import Settings
    from engine.turns.service import TavernService

KINDS: Final[tuple[ImportKind, ...]] = get_args(ImportKind)
CONSOLE: Final = "console"
DEFAULT_REALM: Final = "local"
MAX_FILE_BYTES: Final = 512 * 1024 * 1024
"""A file given on the command line larger than this is refused before it is parsed."""
"""Top-level key of a stored card holding its picture (a PNG without card chunks, base64)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    """A validated file, ready to store: the realm asset (``name``, ``data``), the upload the
    turn service takes (``upload``), or the archive of a chat."""

    kind: ImportKind
    name: str
    data: dict[str, Any]
    upload: bytes = b""
    upload_name: str = ""
    archive: Archive | None = None


def register(sub: Subcommands) -> None:
    """Add the ``import`` command."""
    parser = sub.add_parser("import", help="import a SillyTavern file or a native archive")
    parser.add_argument("kind", choices=KINDS, help="what the file is")
    parser.add_argument("file", type=Path, help="the file to import")
    parser.add_argument(
        "--session", default=None, help="console session (chat: the NEW session's name)"
    )
    parser.add_argument("--realm", default=DEFAULT_REALM, help="realm (default: local)")
    parser.set_defaults(handler=_import)


def read_file(path: Path) -> bytes:
    """The file's bytes; unreadable or over :data:`MAX_FILE_BYTES` is a FormatError."""
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise FormatError(f"over MAX_FILE_BYTES={MAX_FILE_BYTES}", source=str(path))
        return path.read_bytes()
    except OSError as exc:
        raise FormatError(f"cannot read: {exc.strerror or exc}", source=str(path)) from None


def prepare(kind: str, path: Path, data: bytes, *, now: datetime) -> Prepared:
    """Validate ``data`` as ``kind`` completely (FormatError naming file, field, problem)."""
    source = str(path)
    stem = path.stem or path.name
    if kind == "card":
        card = parse_card(data, source=source)
        stored = card_to_asset(card)
        # The turn service reads cards from JSON too, so the picture travels in the object.
        upload = json.dumps(stored, ensure_ascii=False).encode("utf-8")
        return Prepared(
            kind="card", name=card.name, data=stored, upload=upload, upload_name=f"{stem}.json"
        )
    if kind == "preset":
        obj = load_object(data, source=source, what=PRESET_OBJECT)
        parse_preset(obj, source=source)
        return _asset("preset", stem, obj, path, data)
    if kind == "worldbook":
        obj = load_object(data, source=source, what=WORLDBOOK_OBJECT)
        parse_worldbook(obj, source=source, name=stem)
        return _asset("worldbook", stem, obj, path, data)
    if kind == "regex":
        items, _ = load_regex_file(data, source=source)
        return _asset("regex", stem, {"scripts": items}, path, data)
    if kind == "chat":
        if looks_like_archive(data):
            archive = parse_archive(data, source=source)
        else:
            archive = archive_from_st_chat(parse_chat(data, source=source), now=now, source=source)
        return Prepared(kind="chat", name=stem, data={}, archive=archive)
    if kind == "group":
        parse_group(data, source=source)
        return Prepared(kind="group", name=stem, data={}, upload=data, upload_name=path.name)
    raise FormatError(f"unknown kind {kind!r}", source=source)


def _asset(kind: AssetKind, name: str, obj: dict[str, Any], path: Path, data: bytes) -> Prepared:
    return Prepared(kind=kind, name=name, data=obj, upload=data, upload_name=path.name)


def _import(args: argparse.Namespace) -> int:
    from bot.cli import settings_from

    settings = settings_from(args)
    prepared = prepare(args.kind, args.file, read_file(args.file), now=datetime.now(UTC))
    realm = check_name(args.realm, what="realm")
    session = args.session
    if prepared.kind == "chat":
        session = session or prepared.name
    if session is not None:
        check_name(session, what="session")
    print(asyncio.run(_store(settings, prepared, realm=realm, session=session)))
    return 0


@asynccontextmanager
async def open_service(settings: Settings) -> AsyncIterator[tuple[SqlStorage, TavernService]]:
    """The database (migrated, as the application opens it) and a turn service on it.

    Deliberately not the whole :class:`bot.app.Application`: a one-shot import or export must
    not run crash recovery or memory jobs, which would fail the turns of a bot running on the
    same database right now. No model is ever called here.
    """
    from bot.app import Application
    from bot.startup import open_database
    from engine.turns.service import TavernService

    def no_model(profile: object) -> Any:
        raise RuntimeError("import and export never call a model")

    storage = await open_database(settings.database.url, echo=settings.database.echo)
    try:
        profile = Application(settings).default_profile()
        yield storage, TavernService(storage, model_for=no_model, default_profile=profile)
    finally:
        await storage.close()


async def _store(
    settings: Settings, prepared: Prepared, *, realm: str, session: str | None
) -> str:
    from adapters.storage.archive_repo import SqlArchiveRepository
    from engine.timeline.assets import AssetService
    from engine.turns.api import SessionKey

    async with open_service(settings) as (storage, service):
        if prepared.kind == "chat":
            assert prepared.archive is not None and session is not None
            result = await SqlArchiveRepository(storage).import_session(
                prepared.archive, platform=CONSOLE, realm_key=realm, key=session
            )
            a = prepared.archive
            note = "".join(
                f"; {k} {n!r} stored as {new!r}" for (k, n), new in result.renamed_assets.items()
            )
            if result.kept_globals:
                note += f"; kept the realm's own values of {', '.join(result.kept_globals)}"
            return (
                f"imported chat into new session {session!r}: {len(a.branches)} branch(es), "
                f"{len(a.floors)} floor(s), {len(a.pages)} page(s){note}"
            )
        if session is not None:
            key = SessionKey(platform=CONSOLE, realm=realm, key=session)
            await service.open_session(key)
            summary = await service.import_asset(
                key,
                prepared.kind,
                prepared.upload_name,
                prepared.upload,
            )
            return f"imported {summary.kind} {summary.name!r} into session {session!r}"
        if prepared.kind == "group":
            raise ConfigurationError("a group definition sets a session's group: name the session")
        realm_id = await realm_id_of(storage, realm, create=True)
        await AssetService(storage).put(
            realm_id,
            prepared.kind,
            prepared.name,
            prepared.data,
        )
        return f"imported {prepared.kind} {prepared.name!r} into realm {realm!r}"


async def realm_id_of(storage: SqlStorage, realm: str, *, create: bool) -> int:
    """The id of console realm ``realm`` (created when ``create``); NotFoundError otherwise."""
    from engine.timeline.errors import TimelineNotFoundError

    async with storage.unit_of_work() if create else storage.read() as uow:
        found = await uow.realms.find(CONSOLE, realm)
        if found is not None:
            return found.id
        if not create:
            raise TimelineNotFoundError(f"no realm named {realm!r}")
        return (await uow.realms.add(CONSOLE, realm)).id
