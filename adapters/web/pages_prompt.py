"""The prompt inspector: the dry run of a session's next reply on a branch (``?branch=``,
``main`` by default; ``?message=`` the message to assemble for), or of a past floor
(``?floor=N``: as it was assembled, from the itemization stored with its active page; a page
older than itemizations is assembled again as a regenerate of that floor reads it, and the
page says so), as the engine sends it:
each message with its sources, the world-info entries that fired and the key that fired each,
the memory block and the token budget, and the whole as text with a copy button.

A dry run never calls the model and persists nothing (its macro writes are previews).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from adapters.storage.web_repo import SessionEntry
from adapters.web.context import context_of, session_key
from adapters.web.pages_sessions import entry_of
from adapters.web.prompt_view import DEFAULT_PROBE, MAX_PROBE_CHARS, PromptView, prompt_view
from adapters.web.templating import SESSION_TABS, render
from engine.errors import EngineError, NotFoundError
from engine.prompt.wi_sources import BookSource
from engine.timeline.values import MAIN_BRANCH
from engine.turns.parsed_assets import load_assets


async def _books(request: web.Request, platform: str, key: str) -> tuple[BookSource, ...]:
    """The session's world books (the card's own among them), parsed as a turn reads them."""
    service = context_of(request).service
    session = await service.timeline.find_session(platform, key)
    if session is None:
        return ()
    async with service.storage.read() as uow:
        assets = await load_assets(uow, session)
    return assets.books


@dataclass(frozen=True, slots=True, kw_only=True)
class Inspection:
    """What the inspector shows: the view (None with ``error`` when the engine cannot
    assemble), and where it comes from (``source``: ``next`` for the next reply, ``stored``
    for a past page's itemization kept at its commit, ``rebuilt`` for an older page without
    one, assembled again from today's assets)."""

    view: PromptView | None
    branch: str
    message: str
    error: str
    source: str
    floor: int | None = None
    page: int | None = None


async def _stored(
    request: web.Request, entry: SessionEntry, branch: str, floor: int
) -> tuple[int, dict[str, Any] | None]:
    """The active page number of ``floor`` on ``branch`` and its stored itemization."""
    service = context_of(request).service
    session = await service.timeline.find_session(entry.platform, entry.key)
    if session is None:
        raise NotFoundError("no such session")
    target = await service.timeline.branch(session.id, branch)
    view = await service.history_service.floor_view(target.id, floor)
    wanted = _page_number(request)
    if wanted is None:
        page = view.active
    else:
        page = next((p for p in view.pages if p.number == wanted), None)
        if page is None or page.status != "committed":
            raise NotFoundError(f"floor {floor} of branch {branch!r} has no page {wanted}")
    if page is None:
        raise NotFoundError(f"floor {floor} of branch {branch!r} has no reply yet")
    async with service.storage.read() as uow:
        return page.number, await uow.itemizations.of_page(page.id)


async def inspect(request: web.Request) -> Inspection:
    """The inspection the request asks for (``?floor=N``: a past floor as it was assembled)."""
    entry = await entry_of(request)
    branch = request.query.get("branch", "").strip() or MAIN_BRANCH
    message = request.query.get("message", "").strip()[:MAX_PROBE_CHARS] or DEFAULT_PROBE
    service = context_of(request).service
    floor = past_floor(request)
    source, page = "next", None
    try:
        if floor is None:
            data = await service.dry_run(session_key(entry), branch, message)
        else:
            message = ""
            page, stored = await _stored(request, entry, branch, floor)
            if stored is not None:
                data, source = stored, "stored"
            else:
                key = session_key(entry)
                data = await service.parts.previews.dry_run_floor(key, branch, floor)
                source = "rebuilt"
        books = await _books(request, entry.platform, entry.key)
    except EngineError as exc:
        return Inspection(
            view=None, branch=branch, message=message, error=str(exc), source=source, floor=floor
        )
    return Inspection(
        view=prompt_view(data, books),
        branch=branch,
        message=message,
        error="",
        source=source,
        floor=floor,
        page=page,
    )


def _page_number(request: web.Request) -> int | None:
    """The page asked for with a past floor (``?page=P``), or None for its active page."""
    raw = request.query.get("page", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise web.HTTPBadRequest(text="page must be a page number (1 or more)")
    return int(raw)


def past_floor(request: web.Request) -> int | None:
    """The past floor asked for (``?floor=N``), or None for the next reply."""
    raw = request.query.get("floor", "").strip()
    if not raw:
        return None
    if not raw.isdigit() or int(raw) < 1:
        raise web.HTTPBadRequest(text="floor must be a floor number (1 or more)")
    return int(raw)


async def prompt_page(request: web.Request) -> web.Response:
    """The inspector page."""
    entry = await entry_of(request)
    seen = await inspect(request)
    values = {
        "entry": entry,
        "view": seen.view,
        "branch": seen.branch,
        "message": seen.message,
        "floor": seen.floor,
        "page": seen.page,
        "source": seen.source,
        "error": seen.error,
    }
    return render(request, "prompt.html", values)


async def prompt_api(request: web.Request) -> web.Response:
    """The inspector's data as JSON."""
    seen = await inspect(request)
    view = seen.view
    if view is None:
        return web.json_response({"error": seen.error}, status=422)
    return web.json_response(
        {
            "branch": seen.branch,
            "message": seen.message,
            "source": seen.source,
            "floor": seen.floor,
            "page": seen.page,
            "truncated": view.truncated,
            "messages": [
                {
                    "role": m.role,
                    "content": m.content,
                    "sources": list(m.sources),
                    "tokens": m.tokens,
                }
                for m in view.messages
            ],
            "world_info": [
                {"key": w.key, "book": w.book, "fired_by": w.fired_by, "content": w.content}
                for w in view.world
            ],
            "budget": dict(view.budget),
            "warnings": list(view.warnings),
        }
    )


def setup(app: web.Application) -> None:
    """Add the inspector page and its JSON."""
    if ("Prompt", "prompt") not in SESSION_TABS:
        SESSION_TABS.append(("Prompt", "prompt"))
    app.router.add_get("/sessions/{session}/prompt", prompt_page, name="prompt")
    app.router.add_get("/api/sessions/{session}/prompt", prompt_api)
