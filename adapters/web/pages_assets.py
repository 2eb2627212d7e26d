"""The assets page of a session's realm: its cards, presets, world books and regex sets (the
ones the session uses marked), upload of a SillyTavern file (card PNG/JSON, preset, world book,
regex, chat, group; the kind is told from the file as ``/import`` tells it, or named), and
download of each asset as JSON and of each branch as a SillyTavern chat (JSONL).

Uploads go through the engine's ``import_asset``, so a malformed file is refused with the same
one-line error the console and ``tavernbot import`` give.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final, get_args
from urllib.parse import quote

from aiohttp import web

from adapters.console.importing import check_kind, guess_kind, imported_text
from adapters.web.auth import form_text, require_admin
from adapters.web.context import context_of, session_key
from adapters.web.pages_sessions import entry_of
from adapters.web.templating import SESSION_TABS, render
from engine.errors import EngineError, LimitExceededError
from engine.timeline.assets import AssetService
from engine.timeline.values import AssetKind as StoredKind
from engine.turns.api import AssetKind

LISTED_KINDS: Final[tuple[StoredKind, ...]] = get_args(StoredKind)
"""The realm asset kinds the page lists (cards, presets, world books, regex sets)."""
UPLOAD_KINDS: Final[tuple[str, ...]] = get_args(AssetKind)
MAX_UPLOAD_BYTES: Final = 16 * 1024 * 1024
"""Largest file the page imports (the server refuses larger request bodies too)."""


async def _realm_id(request: web.Request) -> tuple[Any, int]:
    entry = await entry_of(request)
    ids = await context_of(request).service.parts.sessions.ids(session_key(entry))
    return entry, ids.realm_id


async def assets_page(request: web.Request) -> web.Response:
    """The realm's assets, the session's branches to download, the upload form."""
    entry, realm_id = await _realm_id(request)
    service = context_of(request).service
    assets = await AssetService(service.storage).list(realm_id)
    info = await service.session_info(session_key(entry))
    used = {("card", n) for n in (info.members or ((info.character,) if info.character else ()))}
    used |= {("preset", info.preset)} if info.preset else set()
    used |= {("worldbook", n) for n in info.worldbooks}
    rows = [
        {"kind": a.kind, "name": a.name, "updated": a.updated_at, "used": (a.kind, a.name) in used}
        for a in assets
        if a.kind in LISTED_KINDS
    ]
    values = {
        "entry": entry,
        "rows": rows,
        "branches": [b.name for b in info.branches],
        "kinds": UPLOAD_KINDS,
        "message": request.query.get("done", ""),
        "error": request.query.get("error", ""),
    }
    return render(request, "assets.html", values)


def _back(request: web.Request, entry_id: int, **query: str) -> web.HTTPSeeOther:
    url = request.app.router["assets"].url_for(session=str(entry_id)).with_query(query)
    return web.HTTPSeeOther(location=str(url))


def _upload_kind(name: str, data: bytes, named: str) -> AssetKind:
    path = Path(name)
    for kind in UPLOAD_KINDS:
        if named == kind:
            check_kind(path, data, kind)  # type: ignore[arg-type]
            return kind  # type: ignore[return-value]
    return guess_kind(path, data)


@require_admin
async def upload_action(request: web.Request) -> web.Response:
    """Import an uploaded file into the realm and use it in the session."""
    entry = await entry_of(request)
    form = await request.post()
    upload = form.get("file")
    if not isinstance(upload, web.FileField):
        raise _back(request, entry.id, error="choose a file to upload")
    data = upload.file.read(MAX_UPLOAD_BYTES + 1)
    name = Path(upload.filename or "upload").name
    try:
        if len(data) > MAX_UPLOAD_BYTES:
            raise LimitExceededError(
                f"{name}: over MAX_UPLOAD_BYTES={MAX_UPLOAD_BYTES}",
                limit="MAX_UPLOAD_BYTES",
                value=MAX_UPLOAD_BYTES,
            )
        kind = _upload_kind(name, data, form_text(form, "kind"))
        summary = await context_of(request).service.import_asset(
            session_key(entry), kind, name, data
        )
    except EngineError as exc:
        raise _back(request, entry.id, error=str(exc)) from None
    raise _back(request, entry.id, done=imported_text(Path(name), summary))


async def download_asset(request: web.Request) -> web.Response:
    """One asset of the realm as JSON."""
    _, realm_id = await _realm_id(request)
    kind = request.match_info["kind"]
    if kind not in LISTED_KINDS:
        raise web.HTTPNotFound(text=f"no asset kind {kind!r}")
    found = await AssetService(context_of(request).service.storage).find(
        realm_id,
        kind,
        request.match_info["name"],
    )
    if found is None:
        raise web.HTTPNotFound(text="no such asset")
    body = json.dumps(found.data, ensure_ascii=False, indent=2).encode("utf-8")
    return _attachment(body, f"{found.name}.json", "application/json")


async def download_chat(request: web.Request) -> web.Response:
    """A branch of the session as a SillyTavern chat (JSONL)."""
    entry = await entry_of(request)
    branch = request.match_info["branch"]
    try:
        body = await context_of(request).service.export_chat(session_key(entry), branch)
    except EngineError as exc:
        raise web.HTTPNotFound(text=str(exc)) from None
    return _attachment(body, f"{entry.key}-{branch}.jsonl", "application/jsonl")


def _attachment(body: bytes, filename: str, content_type: str) -> web.Response:
    response = web.Response(body=body, content_type=content_type, charset="utf-8")
    response.headers["Content-Disposition"] = f"attachment; filename*=UTF-8''{quote(filename)}"
    return response


def setup(app: web.Application) -> None:
    """Add the assets page, the upload and the downloads."""
    if ("Assets", "assets") not in SESSION_TABS:
        SESSION_TABS.append(("Assets", "assets"))
    app.router.add_get("/sessions/{session}/assets", assets_page, name="assets")
    app.router.add_post("/sessions/{session}/assets", upload_action)
    app.router.add_get("/sessions/{session}/assets/{kind}/{name}", download_asset)
    app.router.add_get("/sessions/{session}/chats/{branch}", download_chat)
