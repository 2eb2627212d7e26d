"""Jinja2 rendering for the pages: one autoescaping environment over ``templates/``, and
:func:`render`, which adds what ``base.html`` needs (the token's access, the CSRF token, the
navigation) to every page."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Final

import jinja2
from aiohttp import web

from adapters.web.auth import ACCESS_KEY, CSRF_FIELD, csrf_value

TEMPLATES: Final = Path(__file__).resolve().parent / "templates"
STATIC: Final = Path(__file__).resolve().parent / "static"
NAV: list[tuple[str, str]] = [("Sessions", "/")]
"""Links of the top navigation (label, path); page modules may append theirs in ``setup``."""
SESSION_TABS: list[tuple[str, str]] = []
"""Extra tabs of a session's pages (label, path suffix after ``/sessions/{id}/``); page modules
append theirs in ``setup``."""
ENV_KEY: Final = web.AppKey("tavernbot_jinja", jinja2.Environment)


def build_environment() -> jinja2.Environment:
    """The templates' environment: HTML autoescaped, undefined names an error."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=jinja2.select_autoescape(("html",)),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["session_tabs"] = SESSION_TABS
    env.filters["when"] = _when
    env.filters["pretty_json"] = _pretty_json
    return env


def _when(value: datetime | None) -> str:
    return "—" if value is None else value.strftime("%Y-%m-%d %H:%M UTC")


def _pretty_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)


def render(
    request: web.Request,
    template: str,
    context: Mapping[str, Any] | None = None,
    *,
    status: int = 200,
) -> web.Response:
    """Render ``template`` with ``context`` plus ``access``, ``csrf``, ``csrf_field`` and
    ``nav`` as an HTML response."""
    env = request.app[ENV_KEY]
    values: dict[str, Any] = {
        "access": request.get(ACCESS_KEY),
        "csrf": csrf_value(request),
        "csrf_field": CSRF_FIELD,
        "nav": NAV,
        "path": request.path,
    }
    values.update(context or {})
    text = env.get_template(template).render(values)
    return web.Response(text=text, status=status, content_type="text/html", charset="utf-8")
