"""Variables of page 1 and page 2 of a swiped floor, per scope and merged, with history; an
admin set and delete land through the engine as ``/setvar`` does."""

from __future__ import annotations

import pytest

from engine.turns.api import MAIN_BRANCH
from tests.test_web.served import PLAYED, Served, served  # noqa: F401

pytestmark = pytest.mark.timeout(60)


async def test_each_page_shows_its_own_value(served: Served) -> None:  # noqa: F811
    head = served.bearer(served.reader)
    url = f"/api/sessions/{served.session_id}/variables"
    one = await (
        await served.client.get(url, params={"floor": "1", "page": "1"}, headers=head)
    ).json()
    two = await (
        await served.client.get(url, params={"floor": "1", "page": "2"}, headers=head)
    ).json()
    assert (one["page"], one["merged"]["mood"]) == (1, "happy")
    assert (two["page"], two["merged"]["mood"]) == (2, "grim")
    assert one["page_writes"] and "happy" in str(one["page_writes"])
    head_of_fork = await (
        await served.client.get(url, params={"branch": "main-1"}, headers=head)
    ).json()
    assert head_of_fork["merged"]["mood"] == "calm"


async def test_variables_page_shows_scopes_and_history(served: Served) -> None:  # noqa: F811
    await served.login(served.reader)
    url = f"/sessions/{served.session_id}/variables"
    first = await (await served.client.get(url, params={"floor": "1", "page": "1"})).text()
    second = await (await served.client.get(url, params={"floor": "1", "page": "2"})).text()
    happy, grim = '<code class="value">"happy"</code>', '<code class="value">"grim"</code>'
    assert happy in first and grim not in first
    assert grim in second and happy not in second
    assert 'data-history="mood"' in second and "<td>tool</td>" in second
    assert "Set a variable" not in second  # a read-only token gets no write forms


async def test_admin_set_and_delete_through_forms(served: Served) -> None:  # noqa: F811
    csrf = await served.login(served.admin)
    url = f"/sessions/{served.session_id}/variables"
    done = await served.client.post(
        f"{url}/set",
        data={"name": "gold", "value": "12", "scope": "chat", "branch": "main", "csrf": csrf},
        allow_redirects=False,
    )
    assert done.status == 303
    assert (await served.service.variables(PLAYED, MAIN_BRANCH, "chat"))["gold"] == 12
    history = await served.service.variable_history(PLAYED, MAIN_BRANCH, "gold")
    assert [w.value for w in history] == [12]
    html = await (await served.client.get(url)).text()
    assert "<td>command</td>" in html
    gone = await served.client.post(
        f"{url}/delete",
        data={"name": "gold", "scope": "chat", "branch": "main", "csrf": csrf},
        allow_redirects=False,
    )
    assert gone.status == 303
    assert "gold" not in await served.service.variables(PLAYED, MAIN_BRANCH)


async def test_refused_write_is_shown_and_changes_nothing(served: Served) -> None:  # noqa: F811
    head = served.bearer(served.admin)
    url = f"/api/sessions/{served.session_id}/variables"
    before = await served.service.variables(PLAYED, MAIN_BRANCH)
    bad_scope = await served.client.post(
        url, json={"name": "x", "value": 1, "scope": "cosmos"}, headers=head
    )
    assert bad_scope.status == 400
    too_long = await served.client.post(url, json={"name": "y" * 201, "value": 1}, headers=head)
    assert too_long.status == 400 and "error" in await too_long.json()
    assert await served.service.variables(PLAYED, MAIN_BRANCH) == before
