"""Calls on a played session's memory tab shared by the memory page tests: its JSON listing
and form posts, with a Bearer token."""

from __future__ import annotations

from typing import Any

import aiohttp

from tests.test_web.played import PlayedServer

TIMEOUT = aiohttp.ClientTimeout(total=30)


def auth(token: str) -> dict[str, str]:
    """The header a Bearer token goes in."""
    return {"Authorization": f"Bearer {token}"}


async def memory_records(
    http: aiohttp.ClientSession, played: PlayedServer, **params: str
) -> dict[str, Any]:
    """The session's memory records by id, as the page's JSON lists them under ``params``."""
    url = f"{played.url}/api/sessions/{played.session_id}/memory"
    async with http.get(url, params=params, headers=auth(played.token)) as response:
        assert response.status == 200, await response.text()
        return {r["id"]: r for r in (await response.json())["records"]}


async def post_form(
    http: aiohttp.ClientSession, played: PlayedServer, path: str, token: str, **form: str
) -> aiohttp.ClientResponse:
    """A form posted to ``path`` under the session, redirects not followed."""
    url = f"{played.url}/sessions/{played.session_id}{path}"
    async with http.post(url, data=form, headers=auth(token), allow_redirects=False) as response:
        await response.read()
        return response
