"""Access to the web page: tokens, the login cookie, CSRF, read-only and realm refusals; each
refused write leaves the variables as they were."""

from __future__ import annotations

import pytest

from adapters.storage.web_repo import SqlWebTokens
from adapters.web.auth import TOKEN_COOKIE, digest_of, first_token
from engine.turns.api import MAIN_BRANCH
from tests.test_web.served import PLAYED, Served, served  # noqa: F401

pytestmark = pytest.mark.timeout(60)


async def test_no_token_is_refused_everywhere(served: Served) -> None:  # noqa: F811
    page = await served.client.get("/", allow_redirects=False)
    assert page.status == 303 and page.headers["Location"] == "/login"
    api = await served.client.get("/api/sessions")
    assert api.status == 401
    wrong = await served.client.get("/api/sessions", headers=served.bearer("not-a-token"))
    assert wrong.status == 401
    write = await served.client.post(
        f"/api/sessions/{served.session_id}/variables", json={"name": "x", "value": 1}
    )
    assert write.status == 401
    assert "x" not in await served.service.variables(PLAYED, MAIN_BRANCH)


async def test_login_sets_an_httponly_strict_cookie(served: Served) -> None:  # noqa: F811
    await served.client.get("/login")
    csrf = served.csrf()
    response = await served.client.post(
        "/login", data={"token": served.admin, "csrf": csrf}, allow_redirects=False
    )
    assert response.status == 303
    cookie = response.cookies[TOKEN_COOKIE]
    assert cookie["httponly"] and cookie["samesite"] == "Strict"
    listing = await served.client.get("/")
    assert listing.status == 200 and "story" in await listing.text()


async def test_login_refuses_an_unknown_token_and_a_missing_csrf(served: Served) -> None:  # noqa: F811
    await served.client.get("/login")
    bad = await served.client.post("/login", data={"token": "nope", "csrf": served.csrf()})
    assert bad.status == 401
    no_csrf = await served.client.post("/login", data={"token": served.admin})
    assert no_csrf.status == 403
    assert (await served.client.get("/", allow_redirects=False)).status == 303


async def test_form_write_without_csrf_is_refused(served: Served) -> None:  # noqa: F811
    await served.login(served.admin)
    before = await served.service.variables(PLAYED, MAIN_BRANCH)
    url = f"/sessions/{served.session_id}/variables/set"
    refused = await served.client.post(
        url, data={"name": "mood", "value": "evil", "scope": "chat"}, allow_redirects=False
    )
    assert refused.status == 403
    wrong = await served.client.post(
        url, data={"name": "mood", "value": "evil", "csrf": "forged"}, allow_redirects=False
    )
    assert wrong.status == 403
    assert await served.service.variables(PLAYED, MAIN_BRANCH) == before
    done = await served.client.post(
        url,
        data={"name": "mood", "value": "evil", "scope": "chat", "csrf": served.csrf()},
        allow_redirects=False,
    )
    assert done.status == 303
    assert (await served.service.variables(PLAYED, MAIN_BRANCH, "chat"))["mood"] == "evil"


async def test_read_only_token_cannot_write(served: Served) -> None:  # noqa: F811
    before = await served.service.variables(PLAYED, MAIN_BRANCH)
    url = f"/api/sessions/{served.session_id}/variables"
    head = served.bearer(served.reader)
    assert (await served.client.get(url, headers=head)).status == 200
    refused = await served.client.post(url, json={"name": "x", "value": 1}, headers=head)
    assert refused.status == 403
    deleted = await served.client.delete(
        url, json={"name": "mood", "scope": "branch"}, headers=head
    )
    assert deleted.status == 403
    # the same through the form, logged in with the cookie and a valid CSRF token
    csrf = await served.login(served.reader)
    form = await served.client.post(
        f"/sessions/{served.session_id}/variables/delete",
        data={"name": "mood", "scope": "branch", "csrf": csrf},
        allow_redirects=False,
    )
    assert form.status == 403
    assert await served.service.variables(PLAYED, MAIN_BRANCH) == before


async def test_token_of_another_realm_sees_nothing_and_changes_nothing(
    served: Served,  # noqa: F811
) -> None:
    head = served.bearer(served.other_realm)
    listed = await (await served.client.get("/api/sessions", headers=head)).json()
    assert [s["place"] for s in listed["sessions"]] == ["other-story"]
    base = f"/api/sessions/{served.session_id}"
    assert (await served.client.get(f"{base}/timeline", headers=head)).status == 404
    assert (await served.client.get(f"{base}/variables", headers=head)).status == 404
    page = await served.client.get(f"/sessions/{served.session_id}/timeline", headers=head)
    assert page.status == 404 and "no such session" in await page.text()
    before = await served.service.variables(PLAYED, MAIN_BRANCH)
    write = await served.client.post(
        f"{base}/variables", json={"name": "mood", "value": "stolen"}, headers=head
    )
    assert write.status == 404
    assert await served.service.variables(PLAYED, MAIN_BRANCH) == before
    # its own realm's session is open to it
    own = await served.client.get(f"/api/sessions/{served.other_id}/timeline", headers=head)
    assert own.status == 200


async def test_tokens_are_stored_hashed_and_the_first_is_made_once(
    served: Served,  # noqa: F811
) -> None:
    tokens = SqlWebTokens(served.storage)
    assert await tokens.find(served.admin) is None  # the token itself is not stored
    found = await tokens.find(digest_of(served.admin))
    assert found is not None and found.kind == "admin"
    assert await first_token(tokens) is None  # tokens exist: no new first token
