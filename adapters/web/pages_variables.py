"""Variables of a floor and page: the five scopes merged and one by one, what the page itself
wrote, and each variable's history (which floor and page wrote what, by macro, tool or
command). An admin token sets and deletes through the same service calls as ``/setvar`` and
``/vars``, with the same checks. ``/api/sessions/{id}/variables`` reads and writes JSON."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web
from yarl import URL

from adapters.web.auth import form_text, require_admin
from adapters.web.context import context_of, session_key
from adapters.web.pages_sessions import entry_of
from adapters.web.pages_timeline import BranchView, branch_view, query_int
from adapters.web.templating import render
from adapters.web.timeline_views import FloorLine, PageLine
from engine.errors import EngineError
from engine.timeline.values import MAIN_BRANCH
from engine.variables.service import VariableService
from engine.variables.values import SCOPES, HistoryEntry, Scope, VariableState

MAX_HISTORY_KEYS: Final = 100
"""Variables whose history one page lists (the rest show their values only)."""
MAX_VALUE_CHARS: Final = 20_000
"""Longest value text a form or JSON call may set."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HistoryLine:
    """One write of a variable as the page shows it."""

    scope: str
    value: Any
    deleted: bool
    branch: str | None
    floor: int | None
    page: int | None
    by: str
    """``macro``, ``tool`` or ``command``."""


def parse_value(text: str) -> Any:
    """A typed value as the slash commands take it: JSON when it parses, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _scope(text: str) -> Scope:
    for scope in SCOPES:
        if text == scope:
            return scope
    raise web.HTTPBadRequest(text=f"unknown scope {text!r} (one of {', '.join(SCOPES)})")


def _writer(entry: HistoryEntry, floors: Mapping[tuple[str | None, int | None], FloorLine]) -> str:
    """Who wrote: an explicit write is a command; a page's write is a tool's when one of the
    page's tool calls names the variable, else a macro's."""
    if entry.source == "explicit":
        return "command"
    floor = floors.get((entry.branch, entry.floor))
    page = (
        None if floor is None else next((p for p in floor.pages if p.number == entry.page), None)
    )
    for record in page.tool_records if page is not None else ():
        if entry.key in json.dumps(record.get("arguments"), default=str):
            return "tool"
    return "macro"


def _chosen(view: BranchView, request: web.Request) -> tuple[FloorLine | None, PageLine | None]:
    floor = view.floor(query_int(request, "floor"))
    if floor is None or floor.failed:
        return floor, None
    number = query_int(request, "page") or floor.active_page
    return floor, next((p for p in floor.pages if p.number == number), None)


async def _state(
    variables: VariableService, view: BranchView, floor: FloorLine | None, page: PageLine | None
) -> VariableState:
    if floor is None or page is None or page.status != "committed":
        return await variables.state(view.branch.id)
    return await variables.page_state(view.branch.id, floor=floor.seq, page=page.number)


async def _page_writes(request: web.Request, page: PageLine | None) -> list[tuple[str, Any]]:
    if page is None:
        return []
    writes: list[tuple[str, Any]] = []
    async with context_of(request).storage.read() as uow:
        for scope in SCOPES:
            for mutation in (await uow.variables.page_log([page.id], scope)).get(page.id, []):
                shown = "(deleted)" if mutation.op == "delete" else mutation.value
                writes.append((f"{scope}.{mutation.key}", shown))
    return writes


async def variables_data(request: web.Request) -> dict[str, Any]:
    """What the page and the JSON show."""
    view = await branch_view(request)
    floor, page = _chosen(view, request)
    variables = VariableService(context_of(request).storage)
    try:
        state = await _state(variables, view, floor, page)
    except EngineError as exc:
        raise web.HTTPNotFound(text=str(exc)) from exc
    merged = state.merged()
    floors: dict[tuple[str | None, int | None], FloorLine] = {
        (f.branch, f.seq): f for f in view.floors if not f.failed
    }
    history: dict[str, list[HistoryLine]] = {}
    for name in sorted(merged)[:MAX_HISTORY_KEYS]:
        history[name] = [
            HistoryLine(
                scope=e.scope,
                value=e.value,
                deleted=e.deleted,
                branch=e.branch,
                floor=e.floor,
                page=e.page,
                by=_writer(e, floors),
            )
            for e in await variables.history(view.branch.id, name)
        ]
    return {
        "view": view,
        "entry": view.entry,
        "floor": floor,
        "page": page,
        "merged": merged,
        "scopes": {scope: dict(state.scope(scope)) for scope in SCOPES},
        "page_writes": await _page_writes(request, page),
        "history": history,
    }


async def variables_page(request: web.Request) -> web.Response:
    """The variables of the chosen floor and page (default: the head of the branch)."""
    data = await variables_data(request)
    data["error"] = request.query.get("error")
    data["scope_names"] = SCOPES
    data["selected_floor"] = query_int(request, "floor")
    return render(request, "variables.html", data)


async def variables_api(request: web.Request) -> web.Response:
    """The same as JSON (values must be JSON already)."""
    data = await variables_data(request)
    floor: FloorLine | None = data["floor"]
    page: PageLine | None = data["page"]
    return web.json_response(
        {
            "branch": data["view"].branch.name,
            "floor": None if floor is None else floor.seq,
            "page": None if page is None else page.number,
            "merged": data["merged"],
            "scopes": data["scopes"],
            "page_writes": [list(w) for w in data["page_writes"]],
        }
    )


async def _write(request: web.Request, fields: Mapping[str, str], *, delete: bool) -> str:
    """Set or delete through the engine, as ``/setvar`` does; returns the branch."""
    entry = await entry_of(request)
    branch = fields.get("branch") or MAIN_BRANCH
    name = fields.get("name", "").strip()
    if not name:
        raise web.HTTPBadRequest(text="a variable name is needed")
    scope = _scope(fields.get("scope") or "chat")
    service = context_of(request).service
    key = session_key(entry)
    if delete:
        await service.delete_variable(key, branch, name, scope)
    else:
        text = fields.get("value", "")
        if len(text) > MAX_VALUE_CHARS:
            raise web.HTTPBadRequest(text=f"a value is at most {MAX_VALUE_CHARS} characters")
        await service.set_variable(key, branch, name, parse_value(text), scope)
    return branch


async def _form_write(request: web.Request, *, delete: bool) -> web.StreamResponse:
    form = await request.post()
    fields = {k: form_text(form, k) for k in ("branch", "name", "value", "scope")}
    target = f"/sessions/{request.match_info['session']}/variables"
    try:
        branch = await _write(request, fields, delete=delete)
    except EngineError as exc:
        raise web.HTTPSeeOther(location=str(_url(target, fields["branch"], str(exc)))) from exc
    raise web.HTTPSeeOther(location=str(_url(target, branch, None)))


def _url(path: str, branch: str, error: str | None) -> URL:
    query = {"branch": branch or MAIN_BRANCH}
    if error:
        query["error"] = error
    return URL(path).with_query(query)


@require_admin
async def set_form(request: web.Request) -> web.StreamResponse:
    """The set form (admin)."""
    return await _form_write(request, delete=False)


@require_admin
async def delete_form(request: web.Request) -> web.StreamResponse:
    """The delete form (admin)."""
    return await _form_write(request, delete=True)


@require_admin
async def write_api(request: web.Request) -> web.Response:
    """``POST`` sets, ``DELETE`` deletes: a JSON body ``{name, value, scope, branch}`` (the
    value any JSON)."""
    try:
        body = await request.json()
    except ValueError as exc:
        raise web.HTTPBadRequest(text="the body must be JSON") from exc
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text="the body must be a JSON object")
    value = body.get("value")
    fields = {
        "branch": str(body.get("branch") or MAIN_BRANCH),
        "name": str(body.get("name") or ""),
        "scope": str(body.get("scope") or "chat"),
        "value": value if isinstance(value, str) else json.dumps(value),
    }
    try:
        await _write(request, fields, delete=request.method == "DELETE")
    except EngineError as exc:
        return web.json_response({"error": str(exc)}, status=400)
    return web.json_response({"ok": True})


def setup(app: web.Application) -> None:
    """Add the variables page, its forms and its JSON."""
    app.router.add_get("/sessions/{session}/variables", variables_page, name="variables")
    app.router.add_post("/sessions/{session}/variables/set", set_form)
    app.router.add_post("/sessions/{session}/variables/delete", delete_form)
    app.router.add_get("/api/sessions/{session}/variables", variables_api)
    app.router.add_post("/api/sessions/{session}/variables", write_api)
    app.router.add_delete("/api/sessions/{session}/variables", write_api)
