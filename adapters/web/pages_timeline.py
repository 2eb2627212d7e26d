"""A session's timeline: the branch tree (branches and their fork points), the floors of the
chosen branch (``?branch=``, inherited floors named by their branch) with swipe position and
failed and hidden marks, and one floor opened (``?floor=``): its input, every page's text, the
tool-call records, the model and the token usage. ``/api/sessions/{id}/timeline`` is JSON."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Final

from aiohttp import web

from adapters.storage.web_repo import SessionEntry
from adapters.web.context import context_of, session_key
from adapters.web.pages_sessions import entry_of
from adapters.web.templating import render
from adapters.web.timeline_views import FloorLine, TreeBranch, branch_tree, floor_line
from engine.errors import NotFoundError
from engine.timeline.values import MAIN_BRANCH, Branch
from engine.turns.api import SessionInfo

MAX_FLOORS_SHOWN: Final = 500
"""Newest floors of a branch the timeline lists (the engine's history allows 1000)."""
MAX_BRANCH_NAME: Final = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchView:
    """What the timeline and variables pages read for one branch of a session."""

    entry: SessionEntry
    info: SessionInfo
    branch: Branch
    tree: list[TreeBranch]
    floors: list[FloorLine]

    def floor(self, seq: int | None) -> FloorLine | None:
        """The listed floor ``seq`` (None: the newest one), or None."""
        if not self.floors:
            return None
        if seq is None:
            return self.floors[-1]
        # A failed attempt keeps its number next to the floor that later committed there.
        same = [f for f in self.floors if f.seq == seq]
        return next((f for f in same if not f.failed), same[-1] if same else None)


def query_int(request: web.Request, name: str) -> int | None:
    """An integer query parameter (None when missing; 400 when not a number)."""
    text = request.query.get(name)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError as exc:
        raise web.HTTPBadRequest(text=f"{name} must be a number") from exc


async def branch_view(request: web.Request) -> BranchView:
    """The session of the route and its branch ``?branch=`` (default main), with its floors
    (the chosen floor's every page with its text)."""
    entry = await entry_of(request)
    context = context_of(request)
    service = context.service
    name = request.query.get("branch", MAIN_BRANCH)[:MAX_BRANCH_NAME] or MAIN_BRANCH
    info = await service.session_info(session_key(entry))
    try:
        branch = await service.timeline.branch(entry.id, name)
    except NotFoundError as exc:
        raise web.HTTPNotFound(text=f"this session has no branch {name!r}") from exc
    views = await service.history_service.history(branch.id, limit=MAX_FLOORS_SHOWN)
    async with context.storage.read() as uow:
        messages = await uow.messages.of_floors([v.floor.id for v in views])
    by_floor: dict[int, list[Any]] = {}
    for message in messages:
        by_floor.setdefault(message.floor_id, []).append(message)
    floors = [floor_line(v, by_floor.get(v.floor.id, [])) for v in views]
    return BranchView(
        entry=entry, info=info, branch=branch, tree=branch_tree(info.branches), floors=floors
    )


async def timeline_page(request: web.Request) -> web.Response:
    """The branch tree, the floors and the opened floor."""
    view = await branch_view(request)
    opened = view.floor(query_int(request, "floor"))
    return render(
        request,
        "timeline.html",
        {"view": view, "entry": view.entry, "opened": opened},
    )


async def timeline_api(request: web.Request) -> web.Response:
    """The same as JSON: ``branches`` (the tree) and ``floors`` (each with its pages)."""
    view = await branch_view(request)
    return web.json_response(
        {
            "session": view.entry.id,
            "branch": view.branch.name,
            "branches": [asdict(b) for b in view.tree],
            "floors": [_floor_json(f) for f in view.floors],
        },
        dumps=_dumps,
    )


def _floor_json(floor: FloorLine) -> dict[str, Any]:
    data = asdict(floor)
    data["swipe"] = floor.swipe
    data["failed"] = floor.failed
    return data


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def setup(app: web.Application) -> None:
    """Add the timeline page and its JSON."""
    app.router.add_get("/sessions/{session}/timeline", timeline_page, name="timeline")
    app.router.add_get("/api/sessions/{session}/timeline", timeline_api)
