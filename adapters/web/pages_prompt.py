"""The prompt inspector: the dry run of a session's next reply on a branch (``?branch=``,
``main`` by default; ``?message=`` the message to assemble for), or of a past floor
(``?floor=N``: assembled again as a regenerate of that floor reads it), as the engine sends it:
each message with its sources, the world-info entries that fired and the key that fired each,
the memory block and the token budget, and the whole as text with a copy button.

A dry run never calls the model and persists nothing (its macro writes are previews).
"""

from __future__ import annotations

from aiohttp import web

from adapters.web.context import context_of, session_key
from adapters.web.pages_sessions import entry_of
from adapters.web.prompt_view import DEFAULT_PROBE, MAX_PROBE_CHARS, PromptView, prompt_view
from adapters.web.templating import SESSION_TABS, render
from engine.errors import EngineError
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


async def inspect(request: web.Request) -> tuple[PromptView | None, str, str, str]:
    """The view (None with an error line when the engine cannot assemble), the branch, the
    message and the error."""
    entry = await entry_of(request)
    branch = request.query.get("branch", "").strip() or MAIN_BRANCH
    message = request.query.get("message", "").strip()[:MAX_PROBE_CHARS] or DEFAULT_PROBE
    service = context_of(request).service
    floor = past_floor(request)
    try:
        if floor is None:
            data = await service.dry_run(session_key(entry), branch, message)
        else:
            data = await service.parts.previews.dry_run_floor(session_key(entry), branch, floor)
            message = ""
        books = await _books(request, entry.platform, entry.key)
    except EngineError as exc:
        return None, branch, message, str(exc)
    return prompt_view(data, books), branch, message, ""


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
    view, branch, message, error = await inspect(request)
    values = {
        "entry": entry,
        "view": view,
        "branch": branch,
        "message": message,
        "floor": past_floor(request),
        "error": error,
    }
    return render(request, "prompt.html", values)


async def prompt_api(request: web.Request) -> web.Response:
    """The inspector's data as JSON."""
    view, branch, message, error = await inspect(request)
    if view is None:
        return web.json_response({"error": error}, status=422)
    return web.json_response(
        {
            "branch": branch,
            "message": message,
            "messages": [
                {"role": m.role, "content": m.content, "sources": list(m.sources)}
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
