"""The memory page: a session's long-term memory records with tier, scope, importance, decay,
coverage and lineage (a macro summary and the micros it compacts, an edit and what it
replaced), a search, and the realm's memory jobs with failed and dead ones first. Admins edit,
forget and revive records (``?state=forgotten`` lists the forgotten ones) and revive
dead jobs; every write goes through the engine's memory service (the
calls ``tavernbot memory`` and ``/forget`` make). ``?branch=`` picks the viewpoint (``main``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from aiohttp import web

from adapters.storage.web_repo import SessionEntry
from adapters.web.auth import form_text, require_admin
from adapters.web.context import context_of
from adapters.web.memory_rows import (
    STATES,
    edit_record,
    forget_record,
    job_rows,
    memory_rows,
    revive_job,
    revive_record,
    session_view,
)
from adapters.web.pages_sessions import entry_of
from adapters.web.templating import SESSION_TABS, render
from engine.errors import EngineError, NotFoundError
from engine.memory.lineage import Viewpoint
from engine.memory.service import MemoryService
from engine.timeline.values import MAIN_BRANCH

MAX_QUERY_CHARS: Final = 200
"""Longest memory search text accepted (longer is cut)."""


def _memory(request: web.Request) -> MemoryService:
    memory = context_of(request).service.memory
    if memory is None:
        raise web.HTTPNotFound(text="memory is not enabled in this tavernbot")
    return memory


async def _view(request: web.Request, entry: SessionEntry, branch: str) -> Viewpoint:
    timeline = context_of(request).service.timeline
    session = await timeline.find_session(entry.platform, entry.key)
    if session is None:
        raise web.HTTPNotFound(text="no such session")
    try:
        return await session_view(timeline, session, branch)
    except NotFoundError as exc:
        raise web.HTTPNotFound(text=str(exc)) from None


def _branch(request: web.Request) -> str:
    return request.query.get("branch", "").strip() or MAIN_BRANCH


def _state(request: web.Request) -> str:
    state = request.query.get("state", "").strip()
    if state not in STATES:
        raise web.HTTPBadRequest(text=f"state must be one of: {', '.join(k for k in STATES if k)}")
    return state


async def memory_page(request: web.Request) -> web.Response:
    """Records (or search hits), their lineage, and the realm's jobs."""
    entry = await entry_of(request)
    memory = _memory(request)
    branch = _branch(request)
    view = await _view(request, entry, branch)
    query = request.query.get("q", "").strip()[:MAX_QUERY_CHARS]
    state = _state(request)
    rows = await memory_rows(memory, view, query=query, state=state)
    realm_jobs = await job_rows(memory, view.realm_id)
    values: dict[str, Any] = {
        "entry": entry,
        "branch": branch,
        "query": query,
        "state": state,
        "rows": rows,
        "jobs": realm_jobs,
        "message": request.query.get("done", ""),
        "error": request.query.get("error", ""),
    }
    return render(request, "memory.html", values)


async def memory_api(request: web.Request) -> web.Response:
    """The same records as JSON (``/api/sessions/{session}/memory``)."""
    entry = await entry_of(request)
    memory = _memory(request)
    view = await _view(request, entry, _branch(request))
    query = request.query.get("q", "").strip()[:MAX_QUERY_CHARS]
    rows = await memory_rows(memory, view, query=query, state=_state(request))
    return web.json_response(
        {
            "records": [
                {
                    "id": row.record.id,
                    "kind": row.kind,
                    "tier": row.tier,
                    "scope": row.record.scope.value,
                    "lifecycle": row.lifecycle,
                    "importance": row.record.importance,
                    "decay": round(row.decay, 4),
                    "coverage": row.coverage,
                    "text": row.record.display,
                    "lineage": [
                        {"kind": link.kind, "direction": link.direction, "other": link.other}
                        for link in row.links
                    ],
                }
                for row in rows
            ]
        }
    )


def _back(request: web.Request, entry: SessionEntry, **query: str) -> web.HTTPSeeOther:
    url = (
        request.app.router["memory"]
        .url_for(session=str(entry.id))
        .with_query({"branch": _branch(request), "state": _state(request), **query})
    )
    return web.HTTPSeeOther(location=str(url))


async def _on_record(
    request: web.Request,
    act: Callable[[MemoryService, Viewpoint, str], Awaitable[None]],
    done: str,
) -> web.Response:
    """Apply ``act`` to the record named in the path and go back to the page, saying
    ``done RECORD`` or the engine's one-line refusal."""
    entry = await entry_of(request)
    view = await _view(request, entry, _branch(request))
    record = request.match_info["record"]
    try:
        await act(_memory(request), view, record)
    except EngineError as exc:
        raise _back(request, entry, error=str(exc)) from None
    raise _back(request, entry, done=f"{done} {record}")


@require_admin
async def forget_action(request: web.Request) -> web.Response:
    """Forget one record of the session (on every branch)."""
    return await _on_record(request, forget_record, "forgot")


@require_admin
async def revive_record_action(request: web.Request) -> web.Response:
    """Bring a forgotten record of the session back to active."""
    return await _on_record(request, revive_record, "revived")


@require_admin
async def edit_action(request: web.Request) -> web.Response:
    """Give a record a new text (a new record that updates it)."""
    entry = await entry_of(request)
    memory = _memory(request)
    view = await _view(request, entry, _branch(request))
    form = await request.post()
    try:
        new = await edit_record(
            memory, view, request.match_info["record"], form_text(form, "text")
        )
    except EngineError as exc:
        raise _back(request, entry, error=str(exc)) from None
    raise _back(request, entry, done=f"{request.match_info['record']} is now {new.id}")


@require_admin
async def revive_action(request: web.Request) -> web.Response:
    """Take a dead-lettered memory job of the session's realm out of the dead letter."""
    entry = await entry_of(request)
    memory = _memory(request)
    view = await _view(request, entry, _branch(request))
    form = await request.post()
    job = form_text(form, "job")
    try:
        await revive_job(memory, view.realm_id, job)
    except EngineError as exc:
        raise _back(request, entry, error=str(exc)) from None
    raise _back(request, entry, done=f"revived {job}")


def setup(app: web.Application) -> None:
    """Add the memory page, its JSON and its admin actions."""
    if ("Memory", "memory") not in SESSION_TABS:
        SESSION_TABS.append(("Memory", "memory"))
    app.router.add_get("/sessions/{session}/memory", memory_page, name="memory")
    app.router.add_get("/api/sessions/{session}/memory", memory_api)
    app.router.add_post("/sessions/{session}/memory/{record}/forget", forget_action)
    app.router.add_post("/sessions/{session}/memory/{record}/edit", edit_action)
    app.router.add_post("/sessions/{session}/memory/{record}/revive", revive_record_action)
    app.router.add_post("/sessions/{session}/memory-jobs/revive", revive_action)
