"""Every page module's ``setup(app)``, in one list: a new page adds its module here (and
nothing else), so page modules never edit each other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from aiohttp import web

from adapters.web import (
    live,
    pages_assets,
    pages_login,
    pages_memory,
    pages_prompt,
    pages_sessions,
    pages_timeline,
    pages_variables,
)

Setup = Callable[[web.Application], None]

PAGES: Final[list[Setup]] = [
    pages_login.setup,
    pages_sessions.setup,
    pages_timeline.setup,
    pages_variables.setup,
    pages_memory.setup,
    pages_prompt.setup,
    pages_assets.setup,
    live.setup,
]
"""``setup`` of each page module: adds its routes (and its navigation link, if any)."""


def setup_routes(app: web.Application) -> None:
    """Add every page's routes and the static files."""
    for setup in PAGES:
        setup(app)
