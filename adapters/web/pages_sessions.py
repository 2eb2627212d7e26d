"""The sessions list: every session the token's realm holds, with its platform, place, characters,
preset, world books, settings and last activity; ``?q=`` searches, ``?platform=`` filters.
``/api/sessions`` gives the same as JSON."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from aiohttp import web

from adapters.storage.web_repo import SessionEntry
from adapters.web.auth import access_of, check_realm
from adapters.web.context import context_of, session_key
from adapters.web.templating import render
from engine.errors import EngineError
from engine.turns.api import SessionInfo
from engine.turns.options import option_lines


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRow:
    """One line of the sessions list."""

    id: int
    platform: str
    place: str
    realm: str
    characters: tuple[str, ...]
    preset: str | None
    worldbooks: tuple[str, ...]
    settings: tuple[tuple[str, str], ...]
    branches: int
    last_activity: datetime | None

    def matches(self, query: str) -> bool:
        """Whether ``query`` (lower case) is in any of the row's words."""
        words = (self.place, self.realm, self.platform, self.preset or "", *self.characters)
        return any(query in word.lower() for word in (*words, *self.worldbooks))

    def to_json(self) -> dict[str, Any]:
        """The row as ``/api/sessions`` gives it."""
        return {
            "id": self.id,
            "platform": self.platform,
            "place": self.place,
            "realm": self.realm,
            "characters": list(self.characters),
            "preset": self.preset,
            "worldbooks": list(self.worldbooks),
            "settings": dict(self.settings),
            "branches": self.branches,
            "last_activity": None
            if self.last_activity is None
            else self.last_activity.isoformat(),
        }


def _settings(info: SessionInfo) -> tuple[tuple[str, str], ...]:
    return tuple(option_lines(info))


async def session_row(request: web.Request, entry: SessionEntry) -> SessionRow:
    """The list line of ``entry`` (its settings read through the engine)."""
    info: SessionInfo | None
    try:
        info = await context_of(request).service.session_info(session_key(entry))
    except EngineError:  # a session the engine cannot open is still listed
        info = None
    return SessionRow(
        id=entry.id,
        platform=entry.platform,
        place=entry.key,
        realm=entry.realm,
        characters=(info.members or ((info.character,) if info.character else ())) if info else (),
        preset=info.preset if info else None,
        worldbooks=info.worldbooks if info else (),
        settings=_settings(info) if info else (),
        branches=len(info.branches) if info else 0,
        last_activity=entry.last_activity,
    )


async def listed_rows(request: web.Request) -> tuple[list[SessionRow], str, str]:
    """The rows the token may see, searched and filtered by the query string."""
    access = access_of(request)
    query = request.query.get("q", "").strip()
    platform = request.query.get("platform", "").strip()
    entries = await context_of(request).directory.sessions(realm=access.realm)
    rows = []
    for entry in entries:
        if not access.sees(entry.realm) or (platform and entry.platform != platform):
            continue
        row = await session_row(request, entry)
        if not query or row.matches(query.lower()):
            rows.append(row)
    return rows, query, platform


async def sessions_page(request: web.Request) -> web.Response:
    """The sessions list."""
    rows, query, platform = await listed_rows(request)
    return render(
        request,
        "sessions.html",
        {"rows": rows, "query": query, "platform": platform, "platforms": _PLATFORMS},
    )


async def sessions_api(request: web.Request) -> web.Response:
    """The sessions list as JSON."""
    rows, _, _ = await listed_rows(request)
    return web.json_response({"sessions": [row.to_json() for row in rows]})


async def entry_of(request: web.Request) -> SessionEntry:
    """The session named by the route's ``session`` id, if the token's realm holds it (404
    otherwise: another realm's session looks like no session at all)."""
    try:
        session_id = int(request.match_info["session"])
    except ValueError as exc:
        raise web.HTTPNotFound(text="no such session") from exc
    entry = await context_of(request).directory.session(session_id)
    if entry is None:
        raise web.HTTPNotFound(text="no such session")
    check_realm(request, entry.realm)
    return entry


_PLATFORMS: Final = ("console", "discord", "telegram")


def setup(app: web.Application) -> None:
    """Add ``/`` and ``/api/sessions``."""
    app.router.add_get("/", sessions_page, name="sessions")
    app.router.add_get("/api/sessions", sessions_api)
