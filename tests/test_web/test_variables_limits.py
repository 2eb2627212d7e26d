"""The web page's limits, each at its bound: the token length, a value's length, the floors a
timeline lists, the sessions a listing gives and the variables whose history is shown."""

from __future__ import annotations

import pytest

from adapters.storage import web_repo
from adapters.web import pages_timeline, pages_variables
from adapters.web.auth import MAX_TOKEN_CHARS, Gate
from engine.turns.api import MAIN_BRANCH
from tests.test_web.served import PLAYED, Served, served  # noqa: F401

pytestmark = pytest.mark.timeout(60)


class _NoStore:
    async def find(self, digest: str) -> None:
        return None


async def test_token_length_is_bounded() -> None:
    at_limit = "t" * MAX_TOKEN_CHARS
    over = "t" * (MAX_TOKEN_CHARS + 1)
    assert await Gate(_NoStore(), configured=at_limit).access(at_limit) is not None  # type: ignore[arg-type]
    assert await Gate(_NoStore(), configured=over).access(over) is None  # type: ignore[arg-type]


async def test_value_length_is_bounded(served: Served) -> None:  # noqa: F811
    url = f"/api/sessions/{served.session_id}/variables"
    head = served.bearer(served.admin)
    limit = pages_variables.MAX_VALUE_CHARS
    ok = await served.client.post(url, json={"name": "v", "value": "a" * limit}, headers=head)
    assert ok.status == 200
    over = await served.client.post(
        url, json={"name": "w", "value": "a" * (limit + 1)}, headers=head
    )
    assert over.status == 400
    values = await served.service.variables(PLAYED, MAIN_BRANCH)
    assert len(values["v"]) == limit and "w" not in values


async def test_timeline_lists_the_newest_floors_only(
    served: Served,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pages_timeline, "MAX_FLOORS_SHOWN", 1)
    url = f"/api/sessions/{served.session_id}/timeline"
    data = await (
        await served.client.get(
            url, params={"branch": "main-1"}, headers=served.bearer(served.admin)
        )
    ).json()
    assert [f["seq"] for f in data["floors"]] == [2]


async def test_listing_and_history_are_bounded(
    served: Served,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    head = served.bearer(served.admin)
    monkeypatch.setattr(web_repo, "MAX_SESSIONS_LISTED", 1)
    listed = await (await served.client.get("/api/sessions", headers=head)).json()
    assert len(listed["sessions"]) == 1
    await served.login(served.admin)
    url = f"/sessions/{served.session_id}/variables"
    assert 'data-history="mood"' in await (await served.client.get(url)).text()
    monkeypatch.setattr(pages_variables, "MAX_HISTORY_KEYS", 0)
    assert 'data-history="mood"' not in await (await served.client.get(url)).text()
